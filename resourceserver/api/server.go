package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/tracing"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

// Config is the resource server's configuration. Its zero values are the
// defaults, except Issuer and Audience, which every deployment names.
type Config struct {
	// Issuer is the "iss" every token must carry: the token service's
	// issuer URL (RFC 9068 section 4).
	Issuer string
	// Audience is the "aud" every token must carry.
	Audience string
	// Trust names the reverse proxies in front of the server: only from
	// them are X-Request-Id and X-Forwarded-For believed. The zero value
	// trusts none.
	Trust clientip.Trust
	// Now is the clock that decides token expiry (nil: time.Now).
	Now func() time.Time
	// RateNow is the clock of the per-client rate limit (nil: the Redis
	// server's clock, one clock for every replica). Tests move it instead
	// of sleeping.
	RateNow func() time.Time
	// TokenCacheSize bounds the cache of verified token signatures
	// (0: accesstoken.DefaultCacheSize).
	TokenCacheSize int
	// PublicBaseURL is the API's public base URL (BASE_URL), which a DPoP
	// proof's htu names (RFC 9449 section 4.3). Required
	// (admission.ErrNoPublicBaseURL): never derived from a request.
	PublicBaseURL string
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	errs := []error{accesstoken.CheckNames(c.Issuer, c.Audience)}
	if c.TokenCacheSize < 0 {
		errs = append(errs, errors.New("token cache size must not be negative"))
	}
	return errors.Join(errs...)
}

// Admitter decides one API request of a token's client in one Redis round
// trip: state check, rate limit and description (clients.Store.AdmitAPI).
type Admitter interface {
	AdmitAPI(ctx context.Context, t clients.TokenRef, now func() time.Time) (clients.APIAdmission, error)
}

// Deps are what the server talks to. Every field but Metrics is required.
type Deps struct {
	// Registry is the client registry, normally a *clients.Store.
	Registry Admitter
	// Keys is the server's signing-key authority: the token service's
	// public keys and the withdrawn kids (in production the JWKS cache of
	// package jwks plus a keywithdrawal.Watcher; accesstoken.StaticKeys in
	// a one-process stack or in tests). While its key set returns an
	// error, authenticated requests get 503 and /readyz reports the keys
	// missing.
	Keys accesstoken.KeySource
	// Docs is the documentation served publicly.
	Docs *apidocs.Docs
	// Ready reports whether Redis answers (for /readyz): in production
	// redisconn.Ready, so the node, the Sentinel-managed primary or every
	// primary of a Cluster must answer.
	Ready func(ctx context.Context) error
	// Nonces, when not nil, requires a server nonce in every DPoP proof
	// (DPOP_NONCES; a *dpopnonce.Shared).
	Nonces admission.Nonces
	// Metrics counts answers, refusals and token cache lookups (optional).
	Metrics Metrics
	// Tracing, when set, runs every request in a server span (the base
	// layer's), with a child span for a token's signature check. Nil:
	// tracing off.
	Tracing *tracing.Tracing
}

// server holds what the handlers share. It is immutable after newServer.
type server struct {
	logger *slog.Logger
	cfg    Config
	deps   Deps
	engine *gin.Engine
	// handler is the engine behind the base layer: what NewServer returns.
	handler http.Handler
	tokens  *accesstoken.CachingVerifier
	// admission admits /api/v1 requests (package admission).
	admission *admission.Admission
	// metrics is Deps.Metrics, or noMetrics.
	metrics Metrics
	docs    docSet
	// authenticated is the route group behind bearer authentication and the
	// rate limit; routes.go adds /api/v1 endpoints to it.
	authenticated *gin.RouterGroup
	// slashed are the GET paths that end with a slash (routes.go): a
	// request for one without it is told the path (notFound).
	slashed map[string]bool
}

// NewServer returns the resource server's HTTP handler (a *gin.Engine
// behind the base layer): GET /api/v1/me/, the documentation endpoints and
// the probes. A nil logger discards. It returns an error for an invalid
// configuration (every problem at once) or a missing dependency.
func NewServer(logger *slog.Logger, cfg Config, deps Deps) (http.Handler, error) {
	s, err := newServer(logger, cfg, deps)
	if err != nil {
		return nil, err
	}
	return s.handler, nil
}

func newServer(logger *slog.Logger, cfg Config, deps Deps) (*server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Registry == nil || deps.Keys == nil || deps.Docs == nil || deps.Ready == nil {
		return nil, errors.New("api: registry, keys, docs and readiness check are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if deps.Metrics == nil {
		deps.Metrics = noMetrics{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	// Every failure answers {"detail"}: no redirects with HTML bodies, 405
	// with Allow (RFC 9110 section 15.5.6) instead of 404 for a known path.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.HandleMethodNotAllowed = true
	// Client addresses come from Config.Trust (package clientip,
	// as on the token service), never from Gin, which trusts every proxy
	// unless told otherwise.
	e.ForwardedByClientIP = false
	_ = e.SetTrustedProxies(nil) // nil cannot fail to parse

	s := &server{
		logger:  logger,
		cfg:     cfg,
		deps:    deps,
		engine:  e,
		tokens:  accesstoken.NewCachingVerifier(accesstoken.NewVerifier(deps.Keys, cfg.Issuer, cfg.Audience, cfg.Now), cfg.TokenCacheSize, deps.Metrics.TokenCache),
		metrics: deps.Metrics,
		docs:    newDocSet(deps.Docs),
	}
	var err error
	s.admission, err = admission.New(admission.Config{Clients: admission.Partners, RefuseQueryToken: true, RateNow: cfg.RateNow,
		PublicBaseURL: cfg.PublicBaseURL, Nonces: deps.Nonces, Now: cfg.Now,
		Certificates: clientcert.Source{Trust: cfg.Trust}}, s.tokens, deps.Registry)
	if err != nil {
		return nil, err
	}
	s.routes()
	// No route reads a body: the base layer's default limit is the backstop.
	s.handler = httpserver.Base{Logger: logger, Trust: cfg.Trust, Observer: deps.Metrics, Tracing: deps.Tracing}.Wrap(e)
	return s, nil
}
