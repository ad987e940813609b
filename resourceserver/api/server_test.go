package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// withTestRoutes adds test-only routes of the kind the next release brings:
// one that needs a scope, and organisation-scoped records.
func withTestRoutes(s *server) *server {
	records := map[string]map[string]string{ // org slug -> record id -> value
		"st-marys":  {"r1": "st-marys record"},
		"city-hosp": {"r2": "city-hosp record"},
	}
	ok := func(c *gin.Context) { writeJSON(c, http.StatusOK, statusBody{Status: "ok"}) }
	s.authenticated.GET("/test/patients/", s.RequireScope(clients.ScopePatientsRead), ok)
	s.authenticated.GET("/test/referrals/", s.RequireScope(clients.ScopePatientsRead, clients.ScopeReferralsWrite), ok)
	s.authenticated.GET("/test/orgs/:org/records/:id", s.OrgGuard("org"), func(c *gin.Context) {
		v, found := records[c.Param("org")][c.Param("id")]
		if !found {
			s.fail(c, errNotFound)
			return
		}
		writeJSON(c, http.StatusOK, statusBody{Status: v})
	})
	// A record looked up by id alone, checked against the caller's
	// organisation by the handler.
	s.authenticated.GET("/test/records/:id", func(c *gin.Context) {
		for org, recs := range records {
			if v, found := recs[c.Param("id")]; found && ownsOrg(c, org) {
				writeJSON(c, http.StatusOK, statusBody{Status: v})
				return
			}
		}
		s.fail(c, errNotFound)
	})
	s.engine.GET("/test/panic", func(*gin.Context) { panic("boom") })
	s.engine.GET("/test/error", func(c *gin.Context) { s.fail(c, errors.New("secret internal detail")) })
	return s
}

func TestRequireScope(t *testing.T) {
	f := newFixture(t)
	s := withTestRoutes(f.server())
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital, clients.AllScopes...)

	tests := []struct {
		name, path, scope string
		status            int
		missing           string // the scope the 403 names
	}{
		{"has the scope", "/api/v1/test/patients/", "patients.read", 200, ""},
		{"lacks the scope", "/api/v1/test/patients/", "programme.metrics.read", 403, "patients.read"},
		{"no scope at all", "/api/v1/test/patients/", "", 403, "patients.read"},
		{"has both", "/api/v1/test/referrals/", "patients.read referrals.write", 200, ""},
		{"has one of two", "/api/v1/test/referrals/", "patients.read", 403, "referrals.write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := doGet(t, s.handler, tt.path, f.token(c, tt.scope))
			challenge := ""
			if tt.status == http.StatusOK {
				wantJSON(t, rec, 200, map[string]any{"status": "ok"})
			} else {
				wantJSON(t, rec, 403, map[string]any{"detail": "the access token lacks the scope this endpoint needs: " + tt.missing})
				challenge = `Bearer realm="api", error="insufficient_scope", scope="` + tt.missing + `"`
			}
			// Counted like any API request.
			wantHeader(t, rec, map[string]string{"WWW-Authenticate": challenge, "RateLimit-Limit": "120"})
		})
	}
	// Without a token the scope check is never reached: 401.
	rec := doGet(t, s.handler, "/api/v1/test/patients/", "")
	wantJSON(t, rec, 401, map[string]any{"detail": detailNoToken})
}

// Records outside the caller's organisation answer exactly like records or
// paths that do not exist.
func TestOrgGuard(t *testing.T) {
	f := newFixture(t)
	s := withTestRoutes(f.server())
	tok := f.token(f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital), "")

	notFound := map[string]any{"detail": "not found"}
	tests := []struct {
		name, path string
		status     int
	}{
		{"own organisation, own record", "/api/v1/test/orgs/st-marys/records/r1", 200},
		{"own organisation, missing record", "/api/v1/test/orgs/st-marys/records/r2", 404},
		{"other organisation, existing record", "/api/v1/test/orgs/city-hosp/records/r2", 404},
		{"other organisation, missing record", "/api/v1/test/orgs/city-hosp/records/r9", 404},
		{"unknown organisation", "/api/v1/test/orgs/nowhere/records/r1", 404},
		{"by id: own record", "/api/v1/test/records/r1", 200},
		{"by id: other organisation's record", "/api/v1/test/records/r2", 404},
		{"by id: missing record", "/api/v1/test/records/r9", 404},
		{"unknown path", "/api/v1/test/nothing-here", 404},
	}
	var first *httptest.ResponseRecorder
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := doGet(t, s.handler, tt.path, tok)
			if tt.status == http.StatusOK {
				if rec.Code != 200 {
					t.Fatalf("%d %s", rec.Code, rec.Body)
				}
				return
			}
			wantJSON(t, rec, 404, notFound)
			if tt.name == "unknown path" {
				return // never authenticated: no rate-limit fields
			}
			// Same header names as the answer for a missing record.
			if first == nil {
				first = rec
			}
			if got, want := headerNames(rec.Header()), headerNames(first.Header()); got != want {
				t.Errorf("headers %s, want %s", got, want)
			}
		})
	}
}

func headerNames(h http.Header) string {
	var names []string
	for k := range h {
		if k != "X-Request-Id" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

func TestErrorAnswers(t *testing.T) {
	f := newFixture(t)
	s := withTestRoutes(f.server())
	tests := []struct {
		method, path string
		status       int
		detail       string
		allow        string
	}{
		{"GET", "/nope", 404, "not found", ""},
		// No redirect to the slash, but the path to call (issue 59 point
		// 14), as the token paths say theirs.
		{"GET", "/api/v1/me", 404, "no endpoint at this path: the path ends with a slash, GET /api/v1/me/", ""},
		{"GET", "/api/v1/schema", 404, "no endpoint at this path: the path ends with a slash, GET /api/v1/schema/", ""},
		{"GET", "/api/v1/mex", 404, "not found", ""},
		{"GET", "/api/v1/", 404, "not found", ""},
		{"GET", "/docs/", 404, "not found", ""},
		{"POST", "/api/v1/me/", 405, "method not allowed", "GET, HEAD"},
		{"DELETE", "/api/v1/me/", 405, "method not allowed", "GET, HEAD"},
		{"PUT", "/llms.txt", 405, "method not allowed", "GET, HEAD"},
		{"POST", "/api/v1/schema/", 405, "method not allowed", "GET, HEAD"},
		{"GET", "/test/panic", 500, "internal error", ""},
		{"GET", "/test/error", 500, "internal error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			rec := serve(s.handler, httptest.NewRequest(tt.method, tt.path, strings.NewReader("x")))
			wantJSON(t, rec, tt.status, map[string]any{"detail": tt.detail})
			wantHeader(t, rec, map[string]string{"Allow": tt.allow})
		})
	}
	// The panic and the internal error are logged, with their request id;
	// their details never reach the client.
	var panics, internal int
	for _, r := range f.logs.Records(t) {
		if r["request_id"] == nil || r["request_id"] == "" {
			t.Errorf("record without request_id: %v", r)
		}
		stack, _ := r["stack"].(string)
		if r["msg"] == "panic" && r["panic"] == "boom" && strings.Contains(stack, "goroutine") {
			panics++
		}
		if errText, _ := r["error"].(string); r["msg"] == "internal error" && strings.Contains(errText, "secret internal detail") {
			internal++
		}
	}
	if panics != 1 || internal != 1 {
		t.Errorf("logged %d panics and %d internal errors, want 1 and 1", panics, internal)
	}
}

func TestRequestID(t *testing.T) {
	f := newFixture(t)
	plain := f.server()
	cfg := f.config()
	trust, err := clientip.ParseTrust("192.0.2.0/24")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Trust = trust
	behindProxy := f.newServer(nil, cfg, f.deps())
	generated := regexp.MustCompile(`^[0-9a-f]{32}$`)

	tests := []struct {
		name   string
		s      *server
		remote string
		sent   string
		echoed bool
	}{
		{"no proxy trusted", plain, "192.0.2.1:4000", "req-123", false},
		{"from a trusted proxy", behindProxy, "192.0.2.1:4000", "req-123", true},
		{"from elsewhere", behindProxy, "198.51.100.7:4000", "req-123", false},
		{"unsafe id from a trusted proxy", behindProxy, "192.0.2.1:4000", "req 123\n", false},
		{"id with a colon from a trusted proxy", behindProxy, "192.0.2.1:4000", "req:123", false},
		{"overlong id from a trusted proxy", behindProxy, "192.0.2.1:4000", strings.Repeat("a", 129), false},
		{"none sent", behindProxy, "192.0.2.1:4000", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			req.RemoteAddr = tt.remote
			if tt.sent != "" {
				req.Header.Set("X-Request-Id", tt.sent)
			}
			got := serve(tt.s.handler, req).Header().Get("X-Request-Id")
			if tt.echoed && got != tt.sent || !tt.echoed && !generated.MatchString(got) {
				t.Errorf("X-Request-Id %q (sent %q)", got, tt.sent)
			}
		})
	}
}

// Every log record carries the request id; the access log names the client
// but never the token or the query string.
func TestLogs(t *testing.T) {
	f := newFixture(t)
	s := f.server()
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")
	rec := doGet(t, s.handler, "/api/v1/me/?secret=shh", tok)
	id := rec.Header().Get("X-Request-Id")
	doGet(t, s.handler, "/api/v1/me/", "svc_at_broken")

	records := f.logs.Records(t)
	if len(records) < 3 {
		t.Fatalf("%d records", len(records))
	}
	var access map[string]any
	for _, r := range records {
		if r["request_id"] == nil {
			t.Errorf("record without request_id: %v", r)
		}
		if r["msg"] == "request" && r["request_id"] == id {
			access = r
		}
	}
	if access == nil || access["client_id"] != c.ID || access["status"] != float64(200) || access["path"] != "/api/v1/me/" {
		t.Errorf("access record %v", access)
	}
	raw := f.logs.String()
	for _, secret := range []string{tok, "shh", "svc_at_broken"} {
		if strings.Contains(raw, secret) {
			t.Errorf("logs hold %.20q", secret)
		}
	}
}

func TestProbes(t *testing.T) {
	f := newFixture(t)
	keys := &keySource{set: f.keys.Public()}
	deps := f.deps()
	deps.Keys = keys
	s := f.newServer(nil, f.config(), deps)

	for _, path := range []string{"/healthz", "/readyz"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		rec := serve(s.handler, req)
		wantJSON(t, rec, 200, map[string]any{"status": "ok"})
		f.validate(req, rec)
	}
	// Keys not loaded (the JWKS unreachable): not ready, API answers 503.
	keys.swap(nil, errors.New("jwks: key set not loaded yet"))
	req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
	rec := serve(s.handler, req)
	wantJSON(t, rec, 503, map[string]any{"detail": "signing keys unavailable"})
	f.validate(req, rec)
	wantJSON(t, serve(s.handler, httptest.NewRequest(http.MethodGet, "/healthz", nil)), 200, map[string]any{"status": "ok"})

	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	req = httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
	req.Header.Set("Authorization", "Bearer "+f.token(c, ""))
	rec = serve(s.handler, req)
	wantJSON(t, rec, 503, map[string]any{"detail": "service temporarily unavailable"})
	wantHeader(t, rec, map[string]string{"Retry-After": "5", "WWW-Authenticate": ""})
	f.validate(req, rec)

	// Keys loaded: served.
	keys.swap(f.keys.Public(), nil)
	if rec := serve(s.handler, req); rec.Code != 200 {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// With Redis gone nothing is served (503 + Retry-After, fail closed), and
// service resumes when it is back.
func TestRedisDown(t *testing.T) {
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb, err := redisconn.Open(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	f := newFixtureWith(t, rdb, "")
	s := f.server()
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}

	srv.Kill()
	req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	rec := serve(s.handler, req)
	wantJSON(t, rec, http.StatusServiceUnavailable, map[string]any{"detail": "service temporarily unavailable"})
	wantHeader(t, rec, map[string]string{"Retry-After": "5", "RateLimit-Limit": "", "WWW-Authenticate": ""})
	f.validate(req, rec)
	// A token never seen before is not served either.
	rec = doGet(t, s.handler, "/api/v1/me/", f.token(c, "events.subscribe"))
	wantJSON(t, rec, http.StatusServiceUnavailable, map[string]any{"detail": "service temporarily unavailable"})
	wantJSON(t, doGet(t, s.handler, "/readyz", ""), http.StatusServiceUnavailable, map[string]any{"detail": "redis unavailable"})
	wantJSON(t, doGet(t, s.handler, "/healthz", ""), http.StatusOK, map[string]any{"status": "ok"})
	// The documentation needs no Redis.
	if rec := doGet(t, s.handler, "/llms.txt", ""); rec.Code != http.StatusOK {
		t.Errorf("llms.txt without Redis: %d", rec.Code)
	}
	logged := false
	for _, r := range f.logs.Records(t) {
		logged = logged || r["msg"] == "dependency unavailable" && r["level"] == "WARN"
	}
	if !logged {
		t.Error("the Redis failure was not logged")
	}

	srv.Start()
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
		t.Fatalf("after restart: %d %s", rec.Code, rec.Body)
	}
	wantJSON(t, doGet(t, s.handler, "/readyz", ""), http.StatusOK, map[string]any{"status": "ok"})
}

// The access log names the client's address: X-Forwarded-For only from a
// trusted proxy.
func TestAccessLogClientIP(t *testing.T) {
	f := newFixture(t)
	cfg := f.config()
	trust, err := clientip.ParseTrust("192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Trust = trust
	s := f.newServer(f.logger("info"), cfg, f.deps())
	for _, remote := range []string{"192.0.2.1:4000", "198.51.100.7:4000"} {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		req.RemoteAddr = remote
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		serve(s.handler, req)
	}
	var ips []any
	for _, r := range f.logs.Records(t) {
		if r["msg"] == "request" {
			ips = append(ips, r["client_ip"])
		}
	}
	if len(ips) != 2 || ips[0] != "203.0.113.9" || ips[1] != "198.51.100.7" {
		t.Errorf("client_ip %v, want [203.0.113.9 198.51.100.7]", ips)
	}
}

// NewServer answers a wiring mistake with an error, not a panic, and names
// every problem of the configuration at once.
func TestNewServerErrors(t *testing.T) {
	f := newFixture(t)
	_, err := NewServer(nil, Config{TokenCacheSize: -1}, f.deps())
	for _, want := range []string{"issuer is required", "audience is required", "token cache size must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("invalid configuration: %v, want it to say %q", err, want)
		}
	}
	deps := f.deps()
	deps.Ready = nil
	if _, err := NewServer(nil, f.config(), deps); err == nil {
		t.Error("no readiness check: nil error")
	}
}
