package tokenserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
	"github.com/partnerapi/authplatform/pkg/testclock"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

const (
	testIssuer   = "https://auth.example.test"
	testAudience = "partner-api"
	jsonType     = "application/json"
)

// epoch is where every injected clock starts.
var epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is the tests' hand-moved clock.
type clock = testclock.Clock

func newClock(t time.Time) *clock { return testclock.New(t) }

// env is a token service under test: real Redis under a key prefix of the
// test's own, injected clocks, and one or more instances over httptest.
type env struct {
	t        testing.TB
	rdb      redis.UniversalClient
	prefix   string
	store    *clients.Store
	keys     *accesstoken.KeySet
	now      *clock // token times (iat, exp, expiry checks)
	rate     *clock // rate limits; nil: the Redis server's clock
	trust    clientip.Trust
	failures int64 // per-address and per-client failure limit
	ceiling  int   // per-address ceiling of failed requests
	repeats  int64 // per-address and per-client limit of repeated refused secrets
	legacy   bool  // Config.AcceptLegacySecrets of instances started from now on
	jwks     JWKSPolicy
	lifetime time.Duration // Config.MaxAssertionLifetime
	nonces   nonceSource   // Deps.Nonces (nil: DPoP nonces off)
	logs     *logtest.Sink
	metrics  *metrics.TokenService // every instance's, as one replica's
	url      string                // base URL of the first instance
	srv      *Server
	// authority is the first instance's signing-key authority.
	authority *signingkeys.Authority
	// tracing is every instance's (Deps.Tracing), its Redis hook on rdb.
	tracing *tracing.Tracing
	// clientCAs, when set, makes instances end TLS themselves, asking for
	// (not requiring) client certificates, and check tls_client_auth
	// chains against it (mtls_test.go); tlsServer is the first instance's.
	clientCAs *x509.CertPool
	tlsServer *httptest.Server
}

type envOption func(*env)

// withRedis runs the service on rdb instead of the shared test Redis.
func withRedis(rdb redis.UniversalClient) envOption { return func(e *env) { e.rdb = rdb } }

// withTrust trusts proxies (forwarded addresses and request ids).
func withTrust(list string) envOption {
	return func(e *env) {
		tr, err := clientip.ParseTrust(list)
		if err != nil {
			e.t.Fatal(err)
		}
		e.trust = tr
	}
}

// withFailures sets the per-address failure limit.
func withFailures(n int64) envOption { return func(e *env) { e.failures = n } }

// withRepeats sets the per-address and per-client limit of attempts with
// secrets already refused.
func withRepeats(n int64) envOption { return func(e *env) { e.repeats = n } }

// withCeiling sets the per-address ceiling of failed requests.
func withCeiling(n int) envOption { return func(e *env) { e.ceiling = n } }

// withJWKSPolicy sets what clients' jwks_uri may be.
func withJWKSPolicy(p JWKSPolicy) envOption { return func(e *env) { e.jwks = p } }

// withMaxAssertionLifetime sets Config.MaxAssertionLifetime.
func withMaxAssertionLifetime(d time.Duration) envOption { return func(e *env) { e.lifetime = d } }

// withRedisClock lets the rate limits run on the Redis server's clock.
// withNonces makes every instance require DPoP server nonces from n.
func withNonces(n nonceSource) envOption { return func(e *env) { e.nonces = n } }

// withMTLS serves every instance over TLS, asking for client
// certificates, with tls_client_auth chains checked against cas.
func withMTLS(cas *x509.CertPool) envOption { return func(e *env) { e.clientCAs = cas } }

func withRedisClock() envOption { return func(e *env) { e.rate = nil } }

// withTracing traces every instance's requests and Redis commands.
func withTracing(tr *tracing.Tracing) envOption { return func(e *env) { e.tracing = tr } }

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	e := &env{
		t: t, now: newClock(epoch), rate: newClock(epoch),
		failures: DefaultFailuresPerMinute, logs: &logtest.Sink{}, keys: newKeySet(t),
		metrics: metrics.NewTokenService(metrics.New("authserver")),
	}
	for _, o := range opts {
		o(e)
	}
	if e.rdb == nil {
		e.rdb = redistest.Client(t)
	}
	if err := e.tracing.InstrumentRedis(e.rdb); err != nil {
		t.Fatal(err)
	}
	e.prefix = redistest.Prefix(t, e.rdb)
	e.store = clients.NewStore(e.rdb, e.prefix, nil)
	if _, err := e.store.CreateOrg(context.Background(), clients.OrgSpec{Slug: "acme", Name: "Acme", Environment: clients.EnvironmentLive}); err != nil {
		t.Fatal(err)
	}
	e.authority = newAuthority(t, e.keys)
	e.url, e.srv = e.startWith(e.authority)
	return e
}

// newAuthority is a signing-key authority over ks, as the command builds it.
func newAuthority(t testing.TB, ks *accesstoken.KeySet) *signingkeys.Authority {
	t.Helper()
	a, err := signingkeys.New(ks, testIssuer, testAudience)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// start serves one more instance of the token service, on the env's Redis,
// key prefix, clocks and metrics, signing with keys.
func (e *env) start(keys *accesstoken.KeySet) (string, *Server) {
	e.t.Helper()
	return e.startWith(newAuthority(e.t, keys))
}

// startWith is start with the instance's signing-key authority.
func (e *env) startWith(keys *signingkeys.Authority) (string, *Server) {
	e.t.Helper()
	logger, err := logging.New(e.logs, "debug")
	if err != nil {
		e.t.Fatal(err)
	}
	var rateNow func() time.Time
	if e.rate != nil {
		rateNow = e.rate.Now
	}
	rdb := e.rdb
	s, err := NewServer(logger, Config{
		Issuer: testIssuer, Audience: testAudience, Trust: e.trust, FailuresPerMinute: e.failures,
		RepeatedFailuresPerMinute: e.repeats, AddressFailuresPerMinute: e.ceiling, Now: e.now.Now, RateNow: rateNow,
		AcceptLegacySecrets: e.legacy, JWKS: e.jwks, MaxAssertionLifetime: e.lifetime,
		ClientCAs: e.clientCAs, MTLS: e.clientCAs != nil,
	}, Deps{
		Registry: e.store,
		Keys:     keys,
		Tokens:   accesstoken.NewCachingVerifier(accesstoken.NewVerifier(keys, testIssuer, testAudience, e.now.Now), 0, nil),
		Ready:    func(ctx context.Context) error { return redisconn.Ping(ctx, rdb, time.Second) },
		Metrics:  e.metrics,
		Nonces:   e.nonces,
		Tracing:  e.tracing,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if e.clientCAs != nil {
		hs := httptest.NewUnstartedServer(s)
		hs.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
		hs.StartTLS()
		e.t.Cleanup(hs.Close)
		if e.tlsServer == nil {
			e.tlsServer = hs
		}
		return hs.URL, s
	}
	hs := httptest.NewServer(s)
	e.t.Cleanup(hs.Close)
	return hs.URL, s
}

// checked is how many client credentials the env's instances compared
// against the registry (partnerapi_client_credentials_checked_total, every
// method).
func (e *env) checked() int64 {
	e.t.Helper()
	return int64(counter(e.t, e.metrics, "partnerapi_client_credentials_checked_total", nil))
}

// counter reads the counter name of m's registry: the sum of its series
// whose labels include every one of labels. A name without such a series
// fails the test.
func counter(t testing.TB, m *metrics.TokenService, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum, found := 0.0, false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, mt := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range mt.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			sum += mt.GetCounter().GetValue()
			found = true
		}
	}
	if !found {
		t.Fatalf("no series %s%v", name, labels)
	}
	return sum
}

// client creates an active client of org "acme" and returns its id and secret.
func (e *env) client(audience string, scopes ...string) (string, string) {
	e.t.Helper()
	c, secret, err := e.store.CreateClient(context.Background(), clients.ClientSpec{
		OrgSlug: "acme", Name: "test " + audience, Audience: audience, Scopes: scopes,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return c.ID, secret
}

// newKeySet returns a fresh EdDSA signing key set.
func newKeySet(t testing.TB) *accesstoken.KeySet {
	t.Helper()
	k, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := accesstoken.NewKeySet(k)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// reply is a response as the wire saw it.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// send performs req and reads the whole answer.
func send(t testing.TB, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// newRequest builds a request; contentType "" sends no Content-Type.
func newRequest(t testing.TB, method, target, contentType string, body io.Reader, mods ...func(*http.Request)) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, m := range mods {
		m(req)
	}
	return req
}

// post sends a POST with a string body.
func post(t testing.TB, target, contentType, body string, mods ...func(*http.Request)) reply {
	t.Helper()
	return send(t, newRequest(t, http.MethodPost, target, contentType, strings.NewReader(body), mods...))
}

func get(t testing.TB, target string, mods ...func(*http.Request)) reply {
	t.Helper()
	return send(t, newRequest(t, http.MethodGet, target, "", nil, mods...))
}

// basic authenticates with HTTP Basic, id and secret form-urlencoded first
// (RFC 6749 section 2.3.1).
func basic(id, secret string) func(*http.Request) {
	return basicRaw(url.QueryEscape(id), url.QueryEscape(secret))
}

// basicRaw sends user and password as given.
func basicRaw(user, pass string) func(*http.Request) {
	return header("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
}

func header(name, value string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Add(name, value) }
}

// form encodes key/value pairs in the given order (repeats allowed).
func form(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(kv[i]) + "=" + url.QueryEscape(kv[i+1]))
	}
	return b.String()
}

// jsonBody encodes key/value pairs as a JSON object of strings.
func jsonBody(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// decode decodes a JSON object body.
func decode(t testing.TB, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %q", err, body)
	}
	return m
}

// wantJSON checks the body is exactly the JSON object want.
func wantJSON(t testing.TB, r reply, want string) {
	t.Helper()
	got := decode(t, r.Body)
	exp := decode(t, []byte(want))
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("body:\n got %s\nwant %s", r.Body, want)
	}
}

// wantStatus checks the status code.
func wantStatus(t testing.TB, r reply, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body %s", r.Status, status, r.Body)
	}
}

// wantHeaders checks headers exactly; a "" value means the header must be
// absent.
func wantHeaders(t testing.TB, r reply, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, present := r.Header.Values(k), len(r.Header.Values(k)) > 0
		switch {
		case v == "" && present:
			t.Errorf("header %s: %q, want none", k, got)
		case v != "" && (len(got) != 1 || got[0] != v):
			t.Errorf("header %s: %q, want %q", k, got, v)
		}
	}
}

// jsonHeaders are on every answer of the service.
func jsonHeaders(extra map[string]string) map[string]string {
	h := map[string]string{"Content-Type": "application/json; charset=utf-8"}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// oauthHeaders are on every answer of the token and introspection endpoints.
func oauthHeaders(extra map[string]string) map[string]string {
	h := jsonHeaders(map[string]string{"Cache-Control": "no-store", "Pragma": "no-cache"})
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// Exact error bodies of the token and introspection endpoints.
const (
	bodyInvalidClient = `{"error":"invalid_client","error_description":"Client authentication failed"}`
	bodyInvalidScope  = `{"error":"invalid_scope","error_description":"The requested scope is not held by the client, unknown or malformed"}`
	bodyUnsupported   = `{"error":"unsupported_grant_type","error_description":"grant_type must be client_credentials"}`
	bodySlowDown      = `{"error":"slow_down","error_description":"More than the allowed token requests in a minute for this client; retry after the number of seconds in Retry-After"}`
	bodyBlocked       = `{"error":"slow_down","error_description":"Too many failed client authentications from this address; retry after the number of seconds in Retry-After"}`
	bodyUnavailable   = `{"error":"temporarily_unavailable","error_description":"The service cannot reach its state store; retry after the number of seconds in Retry-After"}`
	bodyInactive      = `{"active":false}`
	basicChallenge    = `Basic realm="partner-api", charset="UTF-8"`
)

func bodyInvalidRequest(desc string) string {
	b, _ := json.Marshal(map[string]string{"error": "invalid_request", "error_description": desc})
	return string(b)
}

// tokenReply checks a 200 token answer byte for byte and returns the token.
func tokenReply(t testing.TB, r reply, scope string) string {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	wantHeaders(t, r, oauthHeaders(nil))
	var got struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.AccessToken, accesstoken.Prefix) {
		t.Fatalf("access_token %q lacks the %s prefix", got.AccessToken, accesstoken.Prefix)
	}
	want, _ := json.Marshal(map[string]any{"access_token": got.AccessToken, "token_type": "Bearer", "expires_in": 3600, "scope": scope})
	if !bytes.Equal(r.Body, want) {
		t.Fatalf("token body:\n got %s\nwant %s", r.Body, want)
	}
	// expires_in is the issued token's own lifetime.
	if _, claims := tokenParts(t, got.AccessToken); claims["exp"].(float64)-claims["iat"].(float64) != 3600 {
		t.Fatalf("token exp - iat = %v - %v, answered expires_in 3600", claims["exp"], claims["iat"])
	}
	return got.AccessToken
}

// token gets a token with HTTP Basic, asserting success.
func (e *env) token(t testing.TB, base, id, secret, scope string) string {
	t.Helper()
	kv := []string{"grant_type", "client_credentials"}
	if scope != "" {
		kv = append(kv, "scope", scope)
	}
	r := post(t, base+PathToken, formType, form(kv...), basic(id, secret))
	wantStatus(t, r, http.StatusOK)
	return mustToken(t, r)
}

func mustToken(t testing.TB, r reply) string {
	t.Helper()
	var got struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil || got.AccessToken == "" {
		t.Fatalf("no token in %s", r.Body)
	}
	return got.AccessToken
}

// introspect asks base about token, authenticating as id with Basic.
func introspect(t testing.TB, base, id, secret, token string) reply {
	t.Helper()
	return post(t, base+PathIntrospect, formType, form("token", token), basic(id, secret))
}

// tokenParts decodes a token's JOSE header and claims.
func tokenParts(t testing.TB, token string) (map[string]any, map[string]any) {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(token, accesstoken.Prefix), ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a compact JWS", token)
	}
	var out [2]map[string]any
	for i := range out {
		raw, err := base64.RawURLEncoding.DecodeString(parts[i])
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		out[i] = decode(t, raw)
	}
	return out[0], out[1]
}
