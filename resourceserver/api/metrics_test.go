package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/metrics"
)

// The metrics of the resource server, read from its registry after real
// requests: answers by route pattern (never the raw path), method and
// status class; refusals by reason; token cache hits and misses.
func TestMetrics(t *testing.T) {
	f := newFixture(t)
	m := metrics.NewResourceServer(metrics.New("resourceserver"))
	deps := f.deps()
	deps.Metrics = m
	s := f.newServer(nil, f.config(), deps)
	// A scoped endpoint, as the next release's will be.
	get(s.authenticated, "/scoped/", s.RequireScope(clients.ScopeProgrammeMetricsRead), func(c *gin.Context) { c.Status(http.StatusNoContent) })
	h := s.handler // its base layer counts the answers (Deps.Metrics)
	ctx := context.Background()

	c := f.client("metrics-org", clients.EnvironmentLive, clients.AudienceHospital, clients.ScopePatientsRead)
	if _, err := f.store.SetRateLimit(ctx, c.ID, 2); err != nil {
		t.Fatal(err)
	}
	tok := f.token(c, clients.ScopePatientsRead)
	for _, tc := range []struct {
		path, token string
		status      int
	}{
		{"/api/v1/me/", tok, 200},            // cache miss
		{"/api/v1/scoped/", tok, 403},        // hit; insufficient_scope
		{"/api/v1/me/", tok, 429},            // hit; rate_limited
		{"/api/v1/me/", "", 401},             // missing_token
		{"/api/v1/me/", "svc_at_x.y.z", 401}, // miss; invalid_token
		{"/docs/quickstart.md", "", 200},
		{"/docs/nope.md", "", 404},
		{"/wp-login.php", "", 404},
	} {
		if rec := doGet(t, h, tc.path, tc.token); rec.Code != tc.status {
			t.Fatalf("GET %s: %d, want %d: %s", tc.path, rec.Code, tc.status, rec.Body)
		}
	}
	// A rotation: the old token is refused as revoked (a hit).
	if _, _, err := f.store.RotateSecret(ctx, c.ID); err != nil {
		t.Fatal(err)
	}
	if rec := doGet(t, h, "/api/v1/me/", tok); rec.Code != 401 {
		t.Fatalf("after rotation: %d", rec.Code)
	}
	// Expired: past "exp" (the cached entry is dropped).
	c2 := f.client("metrics-org", clients.EnvironmentLive, clients.AudienceHospital, clients.ScopePatientsRead)
	old := f.token(c2, clients.ScopePatientsRead)
	f.clock.Add(2 * time.Hour)
	if rec := doGet(t, h, "/api/v1/me/", old); rec.Code != 401 {
		t.Fatalf("expired: %d", rec.Code)
	}

	want := `
# HELP partnerapi_api_refusals_total API requests answered 401, 403 or 429, by status and reason.
# TYPE partnerapi_api_refusals_total counter
partnerapi_api_refusals_total{reason="expired_token",status="401"} 1
partnerapi_api_refusals_total{reason="insufficient_scope",status="403"} 1
partnerapi_api_refusals_total{reason="invalid_token",status="401"} 1
partnerapi_api_refusals_total{reason="missing_token",status="401"} 1
partnerapi_api_refusals_total{reason="rate_limited",status="429"} 1
partnerapi_api_refusals_total{reason="revoked",status="401"} 1
# HELP partnerapi_http_requests_total HTTP requests answered, by route pattern, method and status class.
# TYPE partnerapi_http_requests_total counter
partnerapi_http_requests_total{code="2xx",method="GET",route="/api/v1/me/"} 1
partnerapi_http_requests_total{code="2xx",method="GET",route="/docs/:page"} 1
partnerapi_http_requests_total{code="4xx",method="GET",route="/api/v1/me/"} 5
partnerapi_http_requests_total{code="4xx",method="GET",route="/api/v1/scoped/"} 1
partnerapi_http_requests_total{code="4xx",method="GET",route="/docs/:page"} 1
partnerapi_http_requests_total{code="4xx",method="GET",route="unmatched"} 1
# HELP partnerapi_token_cache_requests_total Lookups of the verified-token cache, by result (hit or miss).
# TYPE partnerapi_token_cache_requests_total counter
partnerapi_token_cache_requests_total{result="hit"} 3
partnerapi_token_cache_requests_total{result="miss"} 3
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want),
		"partnerapi_api_refusals_total", "partnerapi_http_requests_total", "partnerapi_token_cache_requests_total"); err != nil {
		t.Error(err)
	}
}
