package sdk

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/deploy/e2e/inprocess"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

const (
	issuer    = "https://auth.example.com"
	audience  = "partner-api"
	pathMe    = "/api/v1/me/"
	tokenPath = "/api/v1/oauth/token/"
)

// stack is both servers on one httptest server, routed as the edge routes
// them, with a count of the requests each path received.
type stack struct {
	t      testing.TB
	rdb    redis.UniversalClient
	store  *clients.Store
	url    string
	issuer string // the servers' issuer: the issuer constant, or url (selfIssued)
	logs   *logtest.Sink
	tokens atomic.Int64 // requests that reached the token endpoint
	api    atomic.Int64 // requests that reached /api/v1/me/
	// serverNow is the token clock of both servers (iat, exp, expiry).
	serverNow *testclock.Clock
	// rate is the clock of every rate limit.
	rate *testclock.Clock

	mu      sync.Mutex
	answers []answer // every answer, in order
}

// answer is what the servers answered one request.
type answer struct {
	Path       string
	Status     int
	RetryAfter string
}

type stackOption func(*stackCfg)

type stackCfg struct {
	rdb   redis.UniversalClient
	trust clientip.Trust
	// selfIssued makes the stack's own URL the servers' issuer, so the
	// token endpoint URL a client derives from it is the server's.
	selfIssued bool
}

// trusting makes the servers believe X-Forwarded-For from loopback, so a
// test can speak from many client addresses.
func trusting() stackOption {
	return func(c *stackCfg) {
		c.trust, _ = clientip.ParseTrust("127.0.0.1/32")
	}
}

// selfIssued makes the stack's URL (http://127.0.0.1:PORT) the issuer,
// instead of the issuer constant.
func selfIssued() stackOption { return func(c *stackCfg) { c.selfIssued = true } }

// onRedis runs the stack on rdb instead of the shared test Redis.
func onRedis(rdb redis.UniversalClient) stackOption { return func(c *stackCfg) { c.rdb = rdb } }

func newStack(t testing.TB, opts ...stackOption) *stack {
	t.Helper()
	var cfg stackCfg
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.rdb == nil {
		cfg.rdb = redistest.Client(t)
	}
	now := time.Now().UTC().Truncate(time.Second)
	s := &stack{t: t, rdb: cfg.rdb, logs: &logtest.Sink{}, serverNow: testclock.New(now), rate: testclock.New(now), issuer: issuer}
	var handler http.Handler
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	if cfg.selfIssued {
		s.issuer = "http://" + hs.Listener.Addr().String()
	}
	prefix := redistest.Prefix(t, s.rdb)
	logger, err := logging.New(s.logs, "debug")
	if err != nil {
		t.Fatal(err)
	}
	servers := inprocess.NewServers(t, inprocess.Config{
		Issuer: s.issuer, Audience: audience, AuthRedis: s.rdb, KeyPrefix: prefix, Trust: cfg.trust,
		Now: s.serverNow.Now, RateNow: s.rate.Now, AuthLogger: logger, APILogger: logger,
		APIBaseURL: "http://" + hs.Listener.Addr().String(),
	})
	s.store = servers.Store
	auth, res := servers.Auth, servers.API

	handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		switch {
		case inprocess.IsAuthPath(r.URL.Path):
			if r.URL.Path == tokenserver.PathToken {
				s.tokens.Add(1)
			}
			auth.ServeHTTP(rec, r)
		default:
			if r.URL.Path == pathMe {
				s.api.Add(1)
			}
			res.ServeHTTP(rec, r)
		}
		s.mu.Lock()
		s.answers = append(s.answers, answer{r.URL.Path, rec.status, w.Header().Get("Retry-After")})
		s.mu.Unlock()
	})
	hs.Start()
	t.Cleanup(hs.Close)
	s.url = hs.URL
	inprocess.NewOrg(t, s.store, "acme", "Acme Hospital")
	return s
}

// recorder notes the status a server answered.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

// client creates an active client of org "acme" and returns its id and secret.
func (s *stack) client(audience string, scopes ...string) (string, string) {
	s.t.Helper()
	return inprocess.NewClient(s.t, s.store, "acme", audience, scopes...)
}

// history returns the answers so far.
func (s *stack) history() []answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]answer(nil), s.answers...)
}

// sleeper is the SDK's injected Sleep: it records every wait and, instead
// of sleeping, moves the servers' rate clock by it (as time would).
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
	rate  *testclock.Clock
}

func (sl *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	sl.mu.Lock()
	sl.waits = append(sl.waits, d)
	sl.mu.Unlock()
	if sl.rate != nil {
		sl.rate.Add(d)
	}
	return ctx.Err()
}

func (sl *sleeper) Waits() []time.Duration {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return append([]time.Duration(nil), sl.waits...)
}

// config is an SDK configuration for the stack's client id and secret,
// with the sleeper injected and logs discarded.
func (s *stack) config(id, secret string, sl *sleeper) partnerclient.Config {
	return partnerclient.Config{
		BaseURL: s.url, ClientID: id, ClientSecret: secret,
		Sleep: sl.Sleep, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Jitter: func(d time.Duration) time.Duration { return d }, // deterministic backoff
	}
}
