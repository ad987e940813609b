package apidocstest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/partnerapi/authplatform/resourceserver/apidocs"
	"github.com/partnerapi/authplatform/resourceserver/apidocs/apidocstest"
)

func load(t *testing.T) (*apidocstest.Validator, *apidocs.Docs) {
	t.Helper()
	v, err := apidocstest.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	d, err := apidocs.New("")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return v, d
}

func TestValidate(t *testing.T) {
	v, d := load(t)
	ctx := context.Background()

	validMe := map[string]any{
		"api_version":           "1",
		"client_id":             "svc_abcdefghijklmnopqrstuvwx",
		"name":                  "Test client",
		"audience":              "pharma",
		"organization":          map[string]any{"name": "Sandbox Simulation Organisation (demo data only)", "slug": "sandbox-simulation"},
		"environment":           "sandbox",
		"scopes":                []string{"programme.metrics.read"},
		"token_expires_at":      "2026-01-01T01:00:00Z",
		"rate_limit_per_minute": 120,
	}
	with := func(key string, value any) map[string]any {
		m := make(map[string]any, len(validMe))
		for k, v := range validMe {
			m[k] = v
		}
		if value == nil {
			delete(m, key)
		} else {
			m[key] = value
		}
		return m
	}
	jsonHeader := func(kv ...string) http.Header {
		h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	rateLimited := func(kv ...string) http.Header {
		return jsonHeader(append([]string{"RateLimit-Limit", "120", "RateLimit-Remaining", "119", "RateLimit-Reset", "42"}, kv...)...)
	}
	mustJSON := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	tests := []struct {
		name    string
		method  string
		target  string
		status  int
		header  http.Header
		body    []byte
		wantErr bool
	}{
		{"me ok", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(validMe), false},
		{"me ok absolute URL", "GET", "https://api.example.com/api/v1/me/", 200, rateLimited(), mustJSON(validMe), false},
		{"me missing field", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(with("token_expires_at", nil)), true},
		{"me missing organization slug", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(with("organization", map[string]any{"name": "x"})), true},
		{"me extra field", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(with("secret", "x")), true},
		{"me bad audience", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(with("audience", "insurer")), true},
		{"me bad environment", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(with("environment", "test")), true},
		{"me api_version number", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(with("api_version", 1)), true},
		{"me bad date", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(with("token_expires_at", "tomorrow")), true},
		{"me unknown scope", "GET", "/api/v1/me/", 200, rateLimited(), mustJSON(with("scopes", []string{"admin"})), true},
		{"me no rate limit headers", "GET", "/api/v1/me/", 200, jsonHeader(), mustJSON(validMe), true},
		{"me wrong content type", "GET", "/api/v1/me/", 200, rateLimited("Content-Type", "text/plain"), mustJSON(validMe), true},
		{"me not JSON", "GET", "/api/v1/me/", 200, rateLimited(), []byte("{"), true},
		{"me 401", "GET", "/api/v1/me/", 401, jsonHeader("WWW-Authenticate", `Bearer realm="api"`), []byte(`{"detail":"missing token"}`), false},
		{"me 401 without WWW-Authenticate", "GET", "/api/v1/me/", 401, jsonHeader(), []byte(`{"detail":"missing token"}`), true},
		{"me 401 OAuth body", "GET", "/api/v1/me/", 401, jsonHeader("WWW-Authenticate", `Bearer realm="api"`), []byte(`{"error":"invalid_token"}`), true},
		{"me 429", "GET", "/api/v1/me/", 429, rateLimited("Retry-After", "60"), []byte(`{"detail":"slow down"}`), false},
		{"me 429 without Retry-After", "GET", "/api/v1/me/", 429, rateLimited(), []byte(`{"detail":"slow down"}`), true},
		{"me 503", "GET", "/api/v1/me/", 503, jsonHeader("Retry-After", "5"), []byte(`{"detail":"unavailable"}`), false},
		{"me undocumented status", "GET", "/api/v1/me/", 418, jsonHeader(), []byte(`{"detail":"teapot"}`), true},
		{"me wrong method", "POST", "/api/v1/me/", 200, rateLimited(), mustJSON(validMe), true},
		{"me without slash", "GET", "/api/v1/me", 200, rateLimited(), mustJSON(validMe), true},
		{"unknown path", "GET", "/api/v1/nope/", 404, jsonHeader(), []byte(`{"detail":"not found"}`), true},
		{
			"token ok", "POST", "/api/v1/oauth/token/", 200,
			jsonHeader("Cache-Control", "no-store", "Pragma", "no-cache"),
			[]byte(`{"access_token":"svc_at_x.y.z","token_type":"Bearer","expires_in":3600,"scope":""}`), false,
		},
		{
			"token without Cache-Control", "POST", "/api/v1/oauth/token/", 200, jsonHeader("Pragma", "no-cache"),
			[]byte(`{"access_token":"svc_at_x.y.z","token_type":"Bearer","expires_in":3600,"scope":""}`), true,
		},
		{
			"token 400", "POST", "/api/v1/oauth/token/", 400, jsonHeader(),
			[]byte(`{"error":"invalid_scope","error_description":"scope not held"}`), false,
		},
		{
			"token 400 unknown error", "POST", "/api/v1/oauth/token/", 400, jsonHeader(),
			[]byte(`{"error":"bad","error_description":"x"}`), true,
		},
		{
			"token 429 without Retry-After", "POST", "/api/v1/oauth/token/", 429, jsonHeader(),
			[]byte(`{"error":"slow_down","error_description":"x"}`), true,
		},
		{"introspect inactive", "POST", "/api/v1/oauth/introspect/", 200, jsonHeader(), []byte(`{"active":false}`), false},
		{"docs page", "GET", "/docs/quickstart.md", 200, http.Header{"Content-Type": {"text/markdown; charset=utf-8"}}, []byte("# Quickstart\n"), false},
		{"docs page as JSON", "GET", "/docs/quickstart.md", 200, jsonHeader(), []byte(`"x"`), true},
		{"docs page not UTF-8", "GET", "/docs/quickstart.md", 200, http.Header{"Content-Type": {"text/markdown"}}, []byte{0xff, 0xfe}, true},
		{"llms.txt", "GET", "/llms.txt", 200, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, d.LLMsTxt(), false},
		{"schema", "GET", "/api/v1/schema/?format=json", 200, jsonHeader(), d.OpenAPIJSON(), false},
		{"readyz 503", "GET", "/readyz", 503, jsonHeader(), []byte(`{"detail":"redis unavailable"}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.target, nil)
			err := v.Validate(ctx, req, tt.status, tt.header, tt.body)
			if err != nil {
				t.Logf("Validate: %v", err)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("Validate() error = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestValidateConcurrent(t *testing.T) {
	v, _ := load(t)
	header := http.Header{"Content-Type": {"application/json"}, "Retry-After": {"60"},
		"Ratelimit-Limit": {"120"}, "Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"60"}}
	for i := range 8 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
			if err := v.Validate(context.Background(), req, 429, header, []byte(`{"detail":"x"}`)); err != nil {
				t.Error(err)
			}
		})
	}
}
