package tokenserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-oauth2/oauth2/v4/server"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Config configures the token service's HTTP handler.
type Config struct {
	// Issuer is the "iss" of tokens and the base of metadata URLs.
	Issuer string
	// Audience is the "aud" of tokens.
	Audience string
	// Trust names the proxies whose X-Forwarded-For and X-Request-Id count.
	Trust clientip.Trust
	// FailuresPerMinute is how many failed client authentications one
	// address may cause in any minute before its requests are answered 429
	// without being checked (0: DefaultFailuresPerMinute).
	FailuresPerMinute int64
	// Now is the clock for token times (nil: time.Now).
	Now func() time.Time
	// RateNow is the clock of the rate limits (nil: the Redis server's).
	RateNow func() time.Time
	// KeyPrefix starts the Redis keys this handler writes itself ("" in
	// production; tests isolate themselves with their own).
	KeyPrefix string
}

// verifiedCacheSize bounds the introspection cache of verified tokens.
const verifiedCacheSize = 10000

// DefaultFailuresPerMinute is the per-address limit of failed client
// authentications.
const DefaultFailuresPerMinute = 60

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Issuer == "" {
		errs = append(errs, errors.New("issuer is required"))
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("audience is required"))
	}
	if c.FailuresPerMinute < 0 {
		errs = append(errs, errors.New("failures per minute must not be negative"))
	}
	return errors.Join(errs...)
}

// Deps are what the handler talks to.
type Deps struct {
	Registry registry
	Keys     *accesstoken.KeySet
	// Redis runs the per-address failure count (see Config.FailuresPerMinute).
	Redis redis.Scripter
	// Ready reports whether Redis answers (for /readyz).
	Ready func(ctx context.Context) error
	// Metrics counts issued tokens, refusals and cache lookups (optional).
	Metrics recorder
}

// Server is the token service's HTTP handler.
type Server struct {
	log      *slog.Logger
	cfg      Config
	reg      registry
	oauth    *server.Server
	verifier *accesstoken.Verifier
	verified *lru.Cache[string, *accesstoken.Claims]
	failures *ratelimit.Limiter
	blocks   *lru.Cache[string, time.Time]
	ready    func(ctx context.Context) error
	metrics  recorder
	jwks     []byte
	meta     []byte
	mux      http.Handler
}

// NewServer wires the token service.
func NewServer(logger *slog.Logger, cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Registry == nil || deps.Keys == nil || deps.Ready == nil || deps.Redis == nil {
		return nil, errors.New("tokenserver: registry, keys, Redis and readiness check are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if deps.Metrics == nil {
		deps.Metrics = noMetrics{}
	}
	if cfg.FailuresPerMinute == 0 {
		cfg.FailuresPerMinute = DefaultFailuresPerMinute
	}
	issuer, err := accesstoken.NewIssuer(deps.Keys, cfg.Issuer, cfg.Audience)
	if err != nil {
		return nil, err
	}
	jwks, err := deps.Keys.PublicJSON()
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	meta, err := buildMetadata(cfg.Issuer)
	if err != nil {
		return nil, err
	}
	blocks, err := lru.New[string, time.Time](10000)
	if err != nil {
		return nil, err
	}
	verified, err := lru.New[string, *accesstoken.Claims](verifiedCacheSize)
	if err != nil {
		return nil, err
	}
	s := &Server{
		log: logger, cfg: cfg, reg: deps.Registry,
		oauth:    newOAuth(deps.Registry, issuer, cfg),
		verifier: accesstoken.NewVerifier(accesstoken.StaticKeys{Set: deps.Keys.Public()}, cfg.Issuer, cfg.Audience, cfg.Now),
		verified: verified,
		failures: ratelimit.NewLimiter(deps.Redis, cfg.FailuresPerMinute, time.Minute, cfg.RateNow), blocks: blocks, ready: deps.Ready, metrics: deps.Metrics, jwks: jwks, meta: meta,
	}
	s.mux = s.middleware(newRouter(s.routes()))
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, http.Header{"Cache-Control": {"no-store"}}, map[string]string{"status": "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if err := s.ready(r.Context()); err != nil {
		s.log.WarnContext(r.Context(), "not ready", "err", err)
		writeDetail(w, http.StatusServiceUnavailable, http.Header{"Retry-After": {"5"}, "Cache-Control": {"no-store"}}, "redis unavailable")
		return
	}
	writeJSON(w, http.StatusOK, http.Header{"Cache-Control": {"no-store"}}, map[string]string{"status": "ok"})
}
