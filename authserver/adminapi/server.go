package adminapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

// Config configures the admin API.
type Config struct {
	// Trust names the proxies whose X-Forwarded-For and X-Request-Id count
	// (the caller's address is audited).
	Trust clientip.Trust
	// KeyPrefix starts the Redis keys of idempotency records and the admin
	// audit stream: REDIS_KEY_PREFIX, as for the client registry, so
	// deployments sharing one Redis keep apart ("" by default); tests
	// isolate themselves with their own.
	KeyPrefix string
	// RateNow is the clock of the operators' rate limits (nil: Redis's).
	RateNow func() time.Time
	// Now is the clock of audit entries (nil: time.Now).
	Now func() time.Time
	// JWKSAllowHTTP accepts an http jwks_uri for a private_key_jwt client,
	// not only https: the token service's own policy (JWKS_URL_ALLOW_HTTP),
	// so that the API registers no URL the token service would not fetch.
	JWKSAllowHTTP bool
	// PublicBaseURL is the admin API's public base URL (ADMIN_BASE_URL),
	// which a DPoP proof's htu names (RFC 9449 section 4.3). Required
	// (admission.ErrNoPublicBaseURL): never derived from a request.
	PublicBaseURL string
}

// keyInfo tells which keys the service signs with and publishes.
type keyInfo interface {
	SigningKeyID() string
	PublishedKeyIDs() []string
}

// Deps are what the admin API talks to.
type Deps struct {
	Ops *operations.Service
	// Tokens checks a token's signature and claims against the server's
	// signing-key authority (an *accesstoken.CachingVerifier).
	Tokens admission.Verifier
	// Admit checks a token's client state and counts the call against the
	// operator's limit (clients.Store.AdmitAPI).
	Admit admission.Registry
	// Keys is the signing-key authority (a *signingkeys.Authority): which
	// keys the service signs with and publishes.
	Keys keyInfo
	// Nonces, when not nil, requires a server nonce in every DPoP proof
	// (DPOP_NONCES; a *dpopnonce.Shared).
	Nonces admission.Nonces
	// Redis holds idempotency records and the admin audit stream.
	Redis redis.UniversalClient
	// Metrics, when not nil, counts every answer by route, method and
	// status class (a *metrics.Metrics: the token service's registry).
	Metrics httpserver.Observer
	// Console, when not nil, builds the operator console served under
	// /console/ (package authserver/console) over the API's own routes,
	// which it calls in process.
	Console func(api http.Handler) (http.Handler, error)
	// Tracing, when set, runs every call in a server span (the base
	// layer's). Nil: tracing off.
	Tracing *tracing.Tracing
}

// Server is the admin API's HTTP handler.
type Server struct {
	log  *slog.Logger
	cfg  Config
	deps Deps
	idem *idempotency
	// admission admits every call but the public ones (package admission).
	admission *admission.Admission
	audit     *auditLog
	handler   http.Handler
}

// NewServer wires the admin API.
func NewServer(logger *slog.Logger, cfg Config, deps Deps) (*Server, error) {
	if deps.Ops == nil || deps.Tokens == nil || deps.Admit == nil || deps.Keys == nil || deps.Redis == nil {
		return nil, errors.New("adminapi: operations, token verifier, admitter, keys and Redis are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{log: logger, cfg: cfg, deps: deps,
		idem:  &idempotency{rdb: deps.Redis, prefix: cfg.KeyPrefix, ttl: IdempotencyTTL, lockTTL: idempotencyLockTTL},
		audit: &auditLog{rdb: deps.Redis, key: cfg.KeyPrefix + "{admin}:audit", now: cfg.Now}}
	var err error
	if s.admission, err = admission.New(admission.Config{Clients: admission.Operators, RateNow: cfg.RateNow,
		PublicBaseURL: cfg.PublicBaseURL, Nonces: deps.Nonces, Now: cfg.Now,
		Certificates: clientcert.Source{Trust: cfg.Trust}}, deps.Tokens, deps.Admit); err != nil {
		return nil, err
	}
	var routes []httpserver.Route
	for _, rt := range s.routes() {
		routes = append(routes, httpserver.Route{Pattern: rt.method + " " + rt.pattern, Handler: s.endpoint(rt)})
	}
	api := httpserver.NewRouter(routes, s.misrouted)
	if deps.Console != nil {
		console, err := deps.Console(api)
		if err != nil {
			return nil, err
		}
		routes = append(routes, consoleRoutes(console)...)
	}
	s.handler = httpserver.Base{Logger: logger, Trust: cfg.Trust, Observer: deps.Metrics, Tracing: deps.Tracing}.Wrap(httpserver.NewRouter(routes, s.misrouted))
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// misrouted answers a request no route takes as a problem (RFC 9457): 404
// not_found, or 405 method_not_allowed with Allow (the router sets it).
func (s *Server) misrouted(w http.ResponseWriter, r *http.Request, status int, _ []string) {
	if status == http.StatusMethodNotAllowed {
		writeProblem(w, r, s.log, newProblem(http.StatusMethodNotAllowed, "method_not_allowed", "method "+r.Method+" is not allowed here"), nil)
		return
	}
	writeProblem(w, r, s.log, errNotFoundRoute(), nil)
}

// access is what a route needs of its caller.
type access int

const (
	public access = iota // no token (the OpenAPI document)
	read                 // admin.read
	write                // admin.write
)

// route is one endpoint.
type route struct {
	method  string
	pattern string
	access  access
	handle  handlerFunc
}

// handlerFunc runs one operation for an authenticated caller and returns
// what to answer: a status and a body, or an error (problemOf maps it). A
// change the replicas did not confirm returns its body AND the error: it
// is answered 202 with the body and a warning.
type handlerFunc func(ctx context.Context, r *http.Request, body []byte) (int, any, error)

// endpoint wraps an operation: authentication and scope, body, the
// idempotency key, the operation, the answer and the audit entry.
func (s *Server) endpoint(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if rt.access == public {
			status, v, err := rt.handle(ctx, r, nil)
			s.answer(w, r, status, v, err)
			return
		}
		op, p := s.authenticate(ctx, w, r)
		if p != nil {
			writeProblem(w, r, s.log, p, p)
			if op != nil {
				s.record(ctx, r, op, p.Status, false)
			}
			return
		}
		if p := authorize(op, rt.access); p != nil {
			writeProblem(w, r, s.log, p, nil)
			s.record(ctx, r, op, p.Status, false)
			return
		}
		body, p := readBody(r)
		if p != nil {
			writeProblem(w, r, s.log, p, nil)
			s.record(ctx, r, op, p.Status, false)
			return
		}
		ctx = audit.WithActor(ctx, op.actor(r))
		if r.Method != http.MethodGet && r.Header.Get(IdempotencyKeyHeader) != "" {
			status := s.idempotent(ctx, w, r, op, body, rt.handle)
			s.record(ctx, r, op, status, status < 0)
			return
		}
		status, v, err := rt.handle(ctx, r, body)
		status = s.answer(w, r, status, v, err)
		s.record(ctx, r, op, status, false)
	})
}

// answer writes what an operation returned and returns the status sent.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, status int, v any, err error) int {
	a, p := render(status, v, err)
	if p != nil {
		writeProblem(w, r, s.log, p, err)
		return p.Status
	}
	if a.location != "" {
		w.Header().Set("Location", a.location)
	}
	results.WriteBody(w, a.status, nil, a.body)
	return a.status
}

// rendered is an answer ready to send (and to keep for an idempotent
// replay).
type rendered struct {
	status   int
	location string
	body     []byte
}

// render turns an operation's result into an answer, or a problem. A
// change the replicas did not confirm (clients.ErrNotReplicated) with a
// result is 202 Accepted: it took effect on the primary, and its body (a
// new secret included) is the one that holds now, with a "warning" member
// saying what the replicas said.
func render(status int, v any, err error) (rendered, *problem) {
	if err != nil && !(errors.Is(err, clients.ErrNotReplicated) && v != nil) {
		return rendered{}, problemOf(err)
	}
	a := rendered{status: status}
	if l, ok := v.(located); ok {
		a.location = l.Location()
	}
	var merr error
	if err != nil {
		warning := clients.ErrNotReplicated.Error()
		var unconfirmed publicError
		if errors.As(err, &unconfirmed) {
			warning = unconfirmed.Public() // what the replicas said
		}
		a.status = http.StatusAccepted
		a.body, merr = withWarning(v, warning+"; the result above is in force now: do not repeat the request without its Idempotency-Key; read the resource again once a replica answers")
	} else {
		a.body, merr = marshal(v)
	}
	if merr != nil {
		return rendered{}, errInternal()
	}
	return a, nil
}

// publicError is an error that says what happened in words of its own,
// fit for the caller (clients.NotReplicatedError, unconfirmedWithdrawal):
// its Public quotes no error underneath.
type publicError interface {
	error
	Public() string
}

// located is a created resource that names its URL (Location, RFC 9110
// section 10.2.2).
type located interface{ Location() string }

// readBody reads a JSON object body, if any: POST and PUT bodies must be
// application/json; an empty body is no body.
func readBody(r *http.Request) ([]byte, *problem) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, newProblem(http.StatusRequestEntityTooLarge, "too_large", "the body exceeds 64 KiB")
		}
		return nil, invalid("the body could not be read")
	}
	if len(body) == 0 {
		return nil, nil
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, errMediaType()
	}
	return body, nil
}
