package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
	"github.com/partnerapi/authplatform/resourceserver/apidocs/apidocstest"
)

const (
	testIssuer   = "https://auth.test.example"
	testAudience = "partner-api"
)

// clock is the tests' hand-moved clock.
type clock = testclock.Clock

func newClock() *clock {
	// Whole milliseconds, as the rate limiter counts them.
	return testclock.New(time.Now().UTC().Truncate(time.Millisecond))
}

// fixture is one test's world: a Redis prefix of its own, a client
// registry, a signing key set, an issuer and a clock.
type fixture struct {
	t      testing.TB
	rdb    redis.UniversalClient
	store  *clients.Store
	keys   *accesstoken.KeySet
	issuer *accesstoken.Issuer
	clock  *clock
	docs   *apidocs.Docs
	logs   *logtest.Sink
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	rdb := redistest.Client(t)
	return newFixtureWith(t, rdb, redistest.Prefix(t, rdb))
}

func newFixtureWith(t testing.TB, rdb redis.UniversalClient, prefix string) *fixture {
	t.Helper()
	key, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := accesstoken.NewKeySet(key)
	if err != nil {
		t.Fatal(err)
	}
	iss, err := accesstoken.NewIssuer(ks, testIssuer, testAudience)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := apidocs.New("")
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	return &fixture{
		t: t, rdb: rdb, store: clients.NewStore(rdb, prefix, clk.Now),
		keys: ks, issuer: iss, clock: clk, docs: docs, logs: &logtest.Sink{},
	}
}

// config is the server configuration of the fixture: its clock for both
// token expiry and the rate limiter.
func (f *fixture) config() Config {
	return Config{Issuer: testIssuer, Audience: testAudience, Now: f.clock.Now, RateNow: f.clock.Now, PublicBaseURL: "http://example.com"}
}

func (f *fixture) deps() Deps {
	return Deps{
		Registry: f.store, Keys: accesstoken.StaticKeys{Set: f.keys.Public()}, Docs: f.docs,
		Ready: func(ctx context.Context) error { return redisconn.Ready(ctx, f.rdb, time.Second) },
	}
}

// server is a resource server instance (a replica) on the fixture's Redis;
// its JSON logs go to f.logs.
func (f *fixture) server() *server {
	return f.newServer(f.logger("debug"), f.config(), f.deps())
}

// newServer is newServer, failing the test on an error.
func (f *fixture) newServer(logger *slog.Logger, cfg Config, deps Deps) *server {
	f.t.Helper()
	s, err := newServer(logger, cfg, deps)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// logger logs JSON at level to f.logs, through the production handler
// (logging.New), which adds each record's request id.
func (f *fixture) logger(level string) *slog.Logger {
	l, err := logging.New(f.logs, level)
	if err != nil {
		f.t.Fatal(err)
	}
	return l
}

// client creates an organisation and a client in it.
func (f *fixture) client(org, env, audience string, scopes ...string) clients.Client {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.store.CreateOrg(ctx, clients.OrgSpec{Slug: org, Name: "Org " + org, Environment: env}); err != nil && !isExists(err) {
		f.t.Fatal(err)
	}
	c, _, err := f.store.CreateClient(ctx, clients.ClientSpec{OrgSlug: org, Name: "Client of " + org, Audience: audience, Scopes: scopes})
	if err != nil {
		f.t.Fatal(err)
	}
	return c
}

func isExists(err error) bool { return errors.Is(err, clients.ErrExists) }

// token issues a token for c with scope, at its generation and for its
// newest secret, at the clock's time.
func (f *fixture) token(c clients.Client, scope string) string {
	f.t.Helper()
	tok, _, err := f.issuer.Issue(accesstoken.Grant{ClientID: c.ID, Scope: scope, Generation: c.Generation,
		SecretID: c.Secrets[len(c.Secrets)-1].ID, Now: f.clock.Now()})
	if err != nil {
		f.t.Fatal(err)
	}
	return tok
}

// doGet sends a GET with an optional bearer token to h.
func doGet(t testing.TB, h http.Handler, path, token string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return serve(h, req)
}

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// decode decodes a JSON object body.
func decode(t testing.TB, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
	return m
}

// wantJSON checks status, JSON content type and the exact body.
func wantJSON(t testing.TB, rec *httptest.ResponseRecorder, status int, body map[string]any) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != jsonContentType {
		t.Errorf("Content-Type %q, want %q", ct, jsonContentType)
	}
	if got := decode(t, rec); !reflect.DeepEqual(got, body) {
		t.Errorf("body\n got %v\nwant %v", got, body)
	}
}

// wantHeader checks header values exactly ("" means absent).
func wantHeader(t testing.TB, rec *httptest.ResponseRecorder, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
}

// validate checks a real answer against the OpenAPI document.
func (f *fixture) validate(req *http.Request, rec *httptest.ResponseRecorder) {
	f.t.Helper()
	v, err := apidocstest.Load()
	if err != nil {
		f.t.Fatal(err)
	}
	if err := v.Validate(context.Background(), req, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
		f.t.Errorf("OpenAPI: %v", err)
	}
}

// forge builds an svc_at_ token from a header, claims and signature.
func forge(header, claims any, sig []byte) string {
	h, _ := json.Marshal(header)
	c, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	return accesstoken.Prefix + enc(h) + "." + enc(c) + "." + enc(sig)
}

// parts splits a token into its decoded header and claims and its signature.
func parts(t testing.TB, token string) (map[string]any, map[string]any, []byte) {
	t.Helper()
	segs := strings.Split(strings.TrimPrefix(token, accesstoken.Prefix), ".")
	if len(segs) != 3 {
		t.Fatalf("token has %d segments", len(segs))
	}
	var h, c map[string]any
	for i, dst := range []*map[string]any{&h, &c} {
		raw, err := base64.RawURLEncoding.DecodeString(segs[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, dst); err != nil {
			t.Fatal(err)
		}
	}
	sig, err := base64.RawURLEncoding.DecodeString(segs[2])
	if err != nil {
		t.Fatal(err)
	}
	return h, c, sig
}

// keySource is a KeySource whose set or error can change.
type keySource struct {
	mu  sync.Mutex
	set jwk.Set
	err error
}

func (k *keySource) KeySet() (jwk.Set, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.set, k.err
}

func (k *keySource) Withdrawn(string) bool { return false }

func (k *keySource) swap(set jwk.Set, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.set, k.err = set, err
}
