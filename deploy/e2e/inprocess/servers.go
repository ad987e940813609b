package inprocess

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
	"github.com/partnerapi/authplatform/resourceserver/api"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

// Config is what NewServers wires. Issuer, Audience and AuthRedis are
// required; every other zero value is the servers' own default.
type Config struct {
	Issuer, Audience string
	// AuthRedis is the token service's Redis; APIRedis the resource
	// server's (nil: AuthRedis). Two clients behave as two processes do.
	AuthRedis, APIRedis redis.UniversalClient
	// KeyPrefix isolates a test's keys (redistest.Prefix).
	KeyPrefix string
	// Keys signs and verifies (nil: a new Ed25519 key set).
	Keys *accesstoken.KeySet
	// Trust names the proxies both servers believe.
	Trust clientip.Trust
	// FailuresPerMinute is the token service's per-address failure budget.
	FailuresPerMinute int64
	// Now is both servers' token clock; RateNow the clock of the rate
	// limits (nil: the real clock; the Redis server's for limits).
	Now, RateNow func() time.Time
	// AuthLogger and APILogger log each server (nil: discarded).
	AuthLogger, APILogger *slog.Logger
	// DocsBase is the base URL the documentation names ("": relative).
	DocsBase string
	// APIBaseURL is the resource server's public base URL (BASE_URL), the
	// base of its DPoP proofs' htu ("": Issuer, as behind one edge).
	APIBaseURL string
}

// Servers are the token service and the resource server of one test.
type Servers struct {
	Keys *accesstoken.KeySet
	Auth *tokenserver.Server
	API  http.Handler
	// Store is the token service's registry (what the operator CLI uses).
	Store *clients.Store
	// AuthMetrics is the token service's metrics, as its replica would
	// serve them on --metrics-addr.
	AuthMetrics *metrics.TokenService
}

// NewServers wires both servers as deploy/local does, their per-request
// scripts automatically pipelined when the servers' would be on the same
// Redis with the test's REDIS_AUTOPIPELINE (e2etest.AutoPipeline).
func NewServers(t testing.TB, cfg Config) *Servers {
	t.Helper()
	if cfg.APIRedis == nil {
		cfg.APIRedis = cfg.AuthRedis
	}
	discard := slog.New(slog.DiscardHandler)
	if cfg.AuthLogger == nil {
		cfg.AuthLogger = discard
	}
	if cfg.APILogger == nil {
		cfg.APILogger = discard
	}
	s := &Servers{Keys: cfg.Keys, Store: clients.NewStore(cfg.AuthRedis, cfg.KeyPrefix, nil),
		AuthMetrics: metrics.NewTokenService(metrics.New("authserver"))}
	if s.Keys == nil {
		key, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
		if err != nil {
			t.Fatal(err)
		}
		if s.Keys, err = accesstoken.NewKeySet(key); err != nil {
			t.Fatal(err)
		}
	}
	apiStore := clients.NewStore(cfg.APIRedis, cfg.KeyPrefix, nil)
	for _, store := range []struct {
		s   *clients.Store
		rdb redis.UniversalClient
	}{{s.Store, cfg.AuthRedis}, {apiStore, cfg.APIRedis}} {
		if e2etest.AutoPipeline(t) {
			if err := store.s.UseAutoPipeline(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = store.s.Close() })
		}
	}
	authRedis := cfg.AuthRedis
	// The token service's signing-key authority and the verifier over it,
	// as the command wires them.
	authority, err := signingkeys.New(s.Keys, cfg.Issuer, cfg.Audience)
	if err != nil {
		t.Fatal(err)
	}
	s.Auth, err = tokenserver.NewServer(cfg.AuthLogger, tokenserver.Config{
		Issuer: cfg.Issuer, Audience: cfg.Audience, Trust: cfg.Trust, FailuresPerMinute: cfg.FailuresPerMinute,
		Now: cfg.Now, RateNow: cfg.RateNow,
	}, tokenserver.Deps{
		Registry: s.Store, Keys: authority, Metrics: s.AuthMetrics,
		Tokens: accesstoken.NewCachingVerifier(accesstoken.NewVerifier(authority, cfg.Issuer, cfg.Audience, cfg.Now), 0, s.AuthMetrics.TokenCache),
		Ready:  func(ctx context.Context) error { return redisconn.Ping(ctx, authRedis, time.Second) },
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := apidocs.New(cfg.DocsBase)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.APIBaseURL == "" {
		cfg.APIBaseURL = cfg.Issuer
	}
	s.API, err = api.NewServer(cfg.APILogger, api.Config{
		Issuer: cfg.Issuer, Audience: cfg.Audience, Trust: cfg.Trust, Now: cfg.Now, RateNow: cfg.RateNow, PublicBaseURL: cfg.APIBaseURL,
	}, api.Deps{
		Registry: apiStore,
		Keys:     accesstoken.StaticKeys{Set: s.Keys.Public()},
		Docs:     docs,
		Ready:    func(ctx context.Context) error { return redisconn.Ready(ctx, cfg.APIRedis, time.Second) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// CredentialsChecked is how many client credentials the token service
// compared against the registry, every method
// (partnerapi_client_credentials_checked_total).
func (s *Servers) CredentialsChecked(t testing.TB) int64 {
	t.Helper()
	mfs, err := s.AuthMetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "partnerapi_client_credentials_checked_total" {
			var n float64
			for _, m := range mf.GetMetric() {
				n += m.GetCounter().GetValue()
			}
			return int64(n)
		}
	}
	t.Fatal("the token service has no partnerapi_client_credentials_checked_total")
	return 0
}

// Edge is both servers behind one base URL.
func (s *Servers) Edge() http.Handler { return Edge(s.Auth, s.API) }

// Edge routes as deploy/Caddyfile and deploy/local do: the token service's
// paths to auth, everything else to res.
func Edge(auth, res http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsAuthPath(r.URL.Path) {
			auth.ServeHTTP(w, r)
			return
		}
		res.ServeHTTP(w, r)
	})
}

// IsAuthPath reports whether the edge sends path to the token service.
func IsAuthPath(path string) bool {
	return strings.HasPrefix(path, "/api/v1/oauth/") || strings.HasPrefix(path, "/.well-known/")
}

// NewOrg creates the live organisation slug ("Acme Hospital" for "acme").
func NewOrg(t testing.TB, store *clients.Store, slug, name string) {
	t.Helper()
	if _, err := store.CreateOrg(context.Background(), clients.OrgSpec{Slug: slug, Name: name, Environment: clients.EnvironmentLive}); err != nil {
		t.Fatal(err)
	}
}

// NewClient creates an active client of organisation org and returns its
// id and secret.
func NewClient(t testing.TB, store *clients.Store, org, audience string, scopes ...string) (string, string) {
	t.Helper()
	c, secret, err := store.CreateClient(context.Background(), clients.ClientSpec{
		OrgSlug: org, Name: "client " + audience, Audience: audience, Scopes: scopes,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c.ID, secret
}
