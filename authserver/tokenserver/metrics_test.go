package tokenserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// The token service's metrics, read from its registry after real requests:
// tokens issued, refusals by endpoint and OAuth error code (the per-client
// token limit and the spent failure budget both as slow_down), credentials
// checked, introspection's cache, and answers by route.
func TestMetrics(t *testing.T) {
	e := newEnv(t, withFailures(2))
	m := metrics.NewTokenService(metrics.New("authserver"))
	logger, _ := logging.New(e.logs, "debug")
	s, err := NewServer(logger, Config{
		Issuer: testIssuer, Audience: testAudience, FailuresPerMinute: 2,
		Now: e.now.Now, RateNow: e.rate.Now,
	}, Deps{
		Registry: e.store, Keys: e.authority, Metrics: m,
		Tokens: accesstoken.NewCachingVerifier(accesstoken.NewVerifier(e.authority, testIssuer, testAudience, e.now.Now), 0, nil),
		Ready:  func(ctx context.Context) error { return redisconn.Ping(ctx, e.rdb, time.Second) },
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s) // its base layer counts the answers (Deps.Metrics)
	t.Cleanup(hs.Close)
	tokenURL, introspectURL := hs.URL+PathToken, hs.URL+PathIntrospect

	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	if _, err := e.store.SetTokenRateLimit(context.Background(), id, 2); err != nil {
		t.Fatal(err)
	}
	cc := form("grant_type", "client_credentials")
	for _, tc := range []struct {
		url, body string
		auth      func(*http.Request)
		status    int
	}{
		{tokenURL, cc, basic(id, secret), 200},
		{tokenURL, form("grant_type", "client_credentials", "scope", "patients.read"), basic(id, secret), 400}, // invalid_scope
		{tokenURL, form("scope", "x"), basic(id, secret), 400},                                                 // invalid_request
		{tokenURL, form("grant_type", "password"), basic(id, secret), 400},                                     // unsupported_grant_type
		{tokenURL, cc, basic(id, secret), 200},
		{tokenURL, cc, basic(id, secret), 429},                       // slow_down: the client's token limit
		{tokenURL, cc, basic(id, "wrong"), 401},                      // invalid_client: failure 1 of the address
		{introspectURL, form("token", "x"), basic(id, "wrong"), 401}, // introspect invalid_client: failure 2, the budget is spent
		{tokenURL, cc, basic(id, secret), 429},                       // slow_down: the address is blocked
	} {
		if r := post(t, tc.url, formType, tc.body, tc.auth); r.Status != tc.status {
			t.Fatalf("POST %s %s: %d, want %d: %s", tc.url, tc.body, r.Status, tc.status, r.Body)
		}
	}
	if r := get(t, tokenURL); r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("GET token: %d", r.Status)
	}
	if r := get(t, hs.URL+"/api/v1/oauth/token"); r.Status != http.StatusNotFound {
		t.Fatalf("GET without slash: %d", r.Status)
	}

	want := `
# HELP partnerapi_http_requests_total HTTP requests answered, by route pattern, method and status class.
# TYPE partnerapi_http_requests_total counter
partnerapi_http_requests_total{code="2xx",method="POST",route="/api/v1/oauth/token/"} 2
partnerapi_http_requests_total{code="4xx",method="GET",route="/api/v1/oauth/token/"} 1
partnerapi_http_requests_total{code="4xx",method="GET",route="unmatched"} 1
partnerapi_http_requests_total{code="4xx",method="POST",route="/api/v1/oauth/introspect/"} 1
partnerapi_http_requests_total{code="4xx",method="POST",route="/api/v1/oauth/token/"} 6
# HELP partnerapi_tokens_issued_total Access tokens issued.
# TYPE partnerapi_tokens_issued_total counter
partnerapi_tokens_issued_total 2
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "partnerapi_http_requests_total", "partnerapi_tokens_issued_total"); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		endpoint, reason string
		want             float64
	}{
		{"token", "invalid_client", 1}, {"token", "invalid_scope", 1}, {"token", "invalid_request", 1},
		{"token", "unsupported_grant_type", 1}, {"token", "slow_down", 2}, {"token", "temporarily_unavailable", 0},
		{"introspect", "invalid_client", 1}, {"introspect", "slow_down", 0},
	} {
		if got := refusals(t, m, tc.endpoint, tc.reason); got != tc.want {
			t.Errorf("refusals{endpoint=%q,reason=%q} = %v, want %v", tc.endpoint, tc.reason, got, tc.want)
		}
	}
	// Secrets compared: the two tokens, the invalid_scope and both
	// slow_downs of the client's token limit (the limit is counted once the
	// secret matched); not the requests refused before authentication, nor
	// "wrong", whose checksum fails before any lookup.
	for method, want := range map[string]float64{"client_secret": 5, "private_key_jwt": 0} {
		if got := counter(t, m, "partnerapi_client_credentials_checked_total", map[string]string{"method": method}); got != want {
			t.Errorf("credentials checked{method=%q} = %v, want %v", method, got, want)
		}
	}
}

// refusals reads partnerapi_token_refusals_total{endpoint,reason}.
func refusals(t *testing.T, m *metrics.TokenService, endpoint, reason string) float64 {
	t.Helper()
	return counter(t, m, "partnerapi_token_refusals_total", map[string]string{"endpoint": endpoint, "reason": reason})
}
