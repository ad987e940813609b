package tokenserver

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

// Config configures the token service's HTTP handler.
type Config struct {
	// Issuer is the "iss" of tokens and the base of metadata URLs.
	Issuer string
	// Audience is the "aud" of tokens.
	Audience string
	// Trust names the proxies whose X-Forwarded-For and X-Request-Id count.
	Trust clientip.Trust
	// FailuresPerMinute is how many distinct wrong secrets for one client
	// one address may present in any minute before its attempts for that
	// client with a new secret are answered 429 without being checked (0:
	// DefaultFailuresPerMinute). Counted in Redis, across every replica.
	FailuresPerMinute int64
	// RepeatedFailuresPerMinute is how many attempts one address may make
	// in any minute for one client with secrets it already had refused in
	// the last minute (a stale instance's rotated-out secret) before those,
	// and only those, are answered 429 (0:
	// DefaultRepeatedFailuresPerMinute). They are not checked again and do
	// not spend FailuresPerMinute, so the right secret keeps working.
	RepeatedFailuresPerMinute int64
	// AddressFailuresPerMinute is how many failed requests (invalid_client
	// whether or not the id names a client, no credentials, malformed
	// requests) one address may cause in a minute on one replica before
	// they are answered 429 (0: DefaultAddressFailuresPerMinute). It never
	// refuses valid credentials.
	AddressFailuresPerMinute int
	// AcceptLegacySecrets lets secrets issued before checksums (svc_cs_ and
	// 43 base64url characters, see clients.LegacySecret) reach the lookup;
	// off, they are refused like any secret whose checksum fails. It is the
	// operator's transition switch until every such client was rotated.
	AcceptLegacySecrets bool
	// JWKS is what clients' jwks_uri may be (private_key_jwt): https and
	// public addresses only, unless the operator allows otherwise.
	JWKS JWKSPolicy
	// MaxAssertionLifetime is the longest a client assertion may live: its
	// "exp" at most this far ahead (plus AssertionLeeway); its jti is then
	// remembered in Redis until exp plus AssertionLeeway (0:
	// DefaultMaxAssertionLifetime; at most MaxAssertionLifetimeLimit).
	MaxAssertionLifetime time.Duration
	// ClientCAs are the certificate authorities whose client certificates
	// authenticate tls_client_auth clients (RFC 8705 section 2.1;
	// --client-ca). Nil: no tls_client_auth client authenticates.
	ClientCAs *x509.CertPool
	// MTLS says that clients can reach the token endpoint over mutual TLS
	// (this server ends TLS and asks for client certificates, or trusted
	// proxies pass them: mtls.go): the metadata then names the mTLS
	// authentication methods and tls_client_certificate_bound_access_tokens
	// (RFC 8705 sections 2.1.1, 2.2.1 and 3.3).
	MTLS bool
	// MTLSBaseURL, when set, is the public base URL of the mTLS endpoints
	// where it is not the issuer's (a host of its own that asks for client
	// certificates): the metadata's mtls_endpoint_aliases (RFC 8705
	// section 5).
	MTLSBaseURL string
	// Now is the clock for token times (nil: time.Now).
	Now func() time.Time
	// RateNow is the clock of the rate limits (nil: the Redis server's).
	RateNow func() time.Time
}

// DefaultFailuresPerMinute is the per-address and per-client limit of
// failed client authentications.
const DefaultFailuresPerMinute = 60

// DefaultRepeatedFailuresPerMinute is the per-address and per-client limit
// of attempts with secrets already refused: five a second, generous for a
// stale instance's retries, and half the address ceiling, so one stale
// instance alone does not spend its address's ceiling.
const DefaultRepeatedFailuresPerMinute = 300

// DefaultAddressFailuresPerMinute is the per-address ceiling of failed
// requests.
const DefaultAddressFailuresPerMinute = 600

// Validate reports every problem at once.
func (c Config) Validate() error {
	errs := []error{accesstoken.CheckNames(c.Issuer, c.Audience)}
	if c.FailuresPerMinute < 0 || c.RepeatedFailuresPerMinute < 0 || c.AddressFailuresPerMinute < 0 {
		errs = append(errs, errors.New("failures per minute must not be negative"))
	}
	if c.MTLSBaseURL != "" {
		if err := accesstoken.CheckNames(c.MTLSBaseURL, c.Audience); err != nil || !strings.HasPrefix(c.MTLSBaseURL, "https://") {
			errs = append(errs, fmt.Errorf("mTLS base URL %q: want an absolute https URL", c.MTLSBaseURL))
		}
	}
	if c.MaxAssertionLifetime < 0 || c.MaxAssertionLifetime > MaxAssertionLifetimeLimit {
		errs = append(errs, fmt.Errorf("max assertion lifetime %v: want at most %v (0: the default, %v)", c.MaxAssertionLifetime, MaxAssertionLifetimeLimit, DefaultMaxAssertionLifetime))
	}
	return errors.Join(errs...)
}

// Deps are what the handler talks to. Every field but Metrics is required.
type Deps struct {
	Registry registry
	// Keys is the signing-key authority (a *signingkeys.Authority): what
	// the service signs with and publishes.
	Keys signingKeys
	// Tokens verifies tokens for introspection and revocation against the
	// same authority (an *accesstoken.CachingVerifier, shared with the
	// admin API).
	Tokens tokenVerifier
	// Ready reports whether Redis answers (for /readyz).
	Ready func(ctx context.Context) error
	// Metrics counts answers, issued tokens, refusals and cache lookups
	// (optional).
	Metrics recorder
	// Nonces, when set, makes the token endpoint require DPoP server
	// nonces (RFC 9449 section 8; DPOP_NONCES=true): the same shared
	// source the APIs' admission uses. Nil: no nonces.
	Nonces nonceSource
	// Tracing, when set, runs every request in a server span (the base
	// layer's), with child spans for the signature and jwks_uri fetches.
	// Nil: tracing off.
	Tracing *tracing.Tracing
}

// Server is the token service's HTTP handler.
type Server struct {
	log *slog.Logger
	cfg Config
	reg registry
	// managers issue tokens through go-oauth2 (oauth2adapter.go); store
	// is their token store, through which revocation goes too.
	managers *managers
	store    selfContained
	keys     signingKeys
	tokens   tokenVerifier
	ceiling  *addressCeiling
	ready    func(ctx context.Context) error
	metrics  recorder
	nonces   nonceSource
	meta     []byte
	mux      http.Handler
	// assertionKeys caches clients' public keys (private_key_jwt);
	// audiences are the "aud" values a client assertion may carry.
	assertionKeys *assertionKeys
	audiences     []string
	// tokenURL is the token endpoint's public URL: a DPoP proof's htu;
	// mtlsTokenURL its mutual-TLS alias (Config.MTLSBaseURL), "" without
	// one, which a proof's htu and an assertion's aud may name too (RFC
	// 8705 section 5).
	tokenURL, mtlsTokenURL string
	// certs reads requests' client certificates (mtls.go).
	certs clientcert.Source
}

// NewServer wires the token service; a nil logger discards. It returns an
// error for an invalid configuration (every problem at once) or a missing
// dependency.
func NewServer(logger *slog.Logger, cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Registry == nil || deps.Keys == nil || deps.Tokens == nil || deps.Ready == nil {
		return nil, errors.New("tokenserver: registry, keys, token verifier and readiness check are required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.FailuresPerMinute == 0 {
		cfg.FailuresPerMinute = DefaultFailuresPerMinute
	}
	if cfg.RepeatedFailuresPerMinute == 0 {
		cfg.RepeatedFailuresPerMinute = DefaultRepeatedFailuresPerMinute
	}
	if cfg.AddressFailuresPerMinute == 0 {
		cfg.AddressFailuresPerMinute = DefaultAddressFailuresPerMinute
	}
	if cfg.MaxAssertionLifetime == 0 {
		cfg.MaxAssertionLifetime = DefaultMaxAssertionLifetime
	}
	meta, err := buildMetadata(cfg)
	if err != nil {
		return nil, err
	}
	if deps.Metrics == nil {
		deps.Metrics = noMetrics{}
	}
	s := &Server{log: logger, cfg: cfg, reg: deps.Registry, keys: deps.Keys, tokens: deps.Tokens, metrics: deps.Metrics, nonces: deps.Nonces,
		certs: clientcert.Source{Trust: cfg.Trust}}
	if s.ceiling, err = newAddressCeiling(cfg.AddressFailuresPerMinute, s.rateClock); err != nil {
		return nil, err
	}
	s.ready, s.meta = deps.Ready, meta
	if s.assertionKeys, err = newAssertionKeys(deps.Registry, cfg.Now, cfg.JWKS, logger, deps.Metrics); err != nil {
		return nil, err
	}
	// RFC 7523 section 3: the issuer identifier (draft rfc7523bis) or the
	// token endpoint's URL.
	s.tokenURL = strings.TrimSuffix(cfg.Issuer, "/") + PathToken
	s.audiences = []string{cfg.Issuer, s.tokenURL}
	if cfg.MTLSBaseURL != "" {
		s.mtlsTokenURL = strings.TrimSuffix(cfg.MTLSBaseURL, "/") + PathToken
		s.audiences = append(s.audiences, s.mtlsTokenURL)
	}
	s.store = selfContained{tokens: deps.Tokens, reg: deps.Registry}
	s.managers = newManagers(deps.Registry, s.store, &generator{keys: deps.Keys, now: cfg.Now})
	s.mux = httpserver.Base{Logger: logger, Trust: cfg.Trust, MaxBodyBytes: MaxBodyBytes, Observer: s.metrics, Tracing: deps.Tracing}.Wrap(httpserver.NewRouter(s.routes(), s.misrouted))
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	answers.Write(w, http.StatusOK, http.Header{"Cache-Control": {"no-store"}}, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if s.keys.Issuer() == nil {
		httpserver.WriteDetail(w, http.StatusServiceUnavailable, http.Header{"Retry-After": {"5"}, "Cache-Control": {"no-store"}}, "signing key withdrawn")
		return
	}
	if err := s.ready(r.Context()); err != nil {
		s.log.WarnContext(r.Context(), "not ready", "err", err)
		httpserver.WriteDetail(w, http.StatusServiceUnavailable, http.Header{"Retry-After": {"5"}, "Cache-Control": {"no-store"}}, "redis unavailable")
		return
	}
	answers.Write(w, http.StatusOK, http.Header{"Cache-Control": {"no-store"}}, map[string]string{"status": "ok"})
}
