package adminapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestStrictJSON: a member given twice (at any depth) or named in another
// case than the documented one is refused with 400, never applied with a
// guess (issue 27 point 6); nothing is created.
func TestStrictJSON(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	if a := s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "strict", "name": "Strict", "environment": "live"}); a.Status != 201 {
		t.Fatalf("create org: %d %s", a.Status, a.Body)
	}
	created := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"organization_slug": "strict", "name": "c", "audience": "pharma", "scopes": []string{}})
	id, _ := created.json(t)["client_id"].(string)
	cases := []struct {
		name, method, path, body, detail string
	}{
		{"duplicate", "POST", "/admin/v1/orgs", `{"slug":"dup-a","name":"A","environment":"live","slug":"dup-b"}`,
			`member "slug" is given twice`},
		{"case variant", "POST", "/admin/v1/orgs", `{"SLUG":"case-a","name":"A","environment":"live"}`,
			`member "SLUG" is not known; names are case-sensitive: "slug"`},
		{"case variant beside the real one", "POST", "/admin/v1/orgs", `{"slug":"case-b","Slug":"case-c","name":"A","environment":"live"}`,
			`member "Slug" is not known; names are case-sensitive: "slug"`},
		{"duplicate limit", "PUT", "/admin/v1/clients/" + id + "/rate-limit", `{"rate_limit_per_minute":5,"rate_limit_per_minute":6000}`,
			`member "rate_limit_per_minute" is given twice`},
		{"case variant limit", "PUT", "/admin/v1/clients/" + id + "/rate-limit", `{"Rate_Limit_Per_Minute":5}`,
			`member "Rate_Limit_Per_Minute" is not known; names are case-sensitive: "rate_limit_per_minute"`},
		{"duplicate in a nested object", "POST", "/admin/v1/clients",
			`{"organization_slug":"strict","name":"k","audience":"pharma","scopes":[],"auth_method":"private_key_jwt","jwks":{"keys":[],"keys":[]}}`,
			`member "jwks.keys" is given twice`},
		{"duplicate inside an array's object", "PUT", "/admin/v1/clients/" + id + "/keys",
			`{"jwks":{"keys":[{"kty":"OKP","kty":"EC"}]}}`,
			`member "jwks.keys[0].kty" is given twice`},
		{"case variant of an embedded struct's member", "POST", "/admin/v1/clients",
			`{"organization_slug":"strict","name":"k","audience":"pharma","scopes":[],"auth_method":"private_key_jwt","JWKS_URI":"https://example.test/jwks"}`,
			`member "JWKS_URI" is not known; names are case-sensitive: "jwks_uri"`},
	}
	for _, tc := range cases {
		a := s.call(hc, tc.method, tc.path, tc.body)
		if a.Status != http.StatusBadRequest || a.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want 400", tc.name, a.Status, a.Body)
			continue
		}
		p := a.json(t)
		want := map[string]any{"type": "about:blank", "title": "Bad Request", "status": 400.0, "code": "invalid_request",
			"detail": tc.detail, "request_id": a.Header.Get("X-Request-Id")}
		if len(p) != len(want) {
			t.Errorf("%s: problem %s", tc.name, a.Body)
		}
		for k, v := range want {
			if p[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.name, k, p[k], v)
			}
		}
	}
	// Nothing was made or changed by the refused bodies.
	for _, slug := range []string{"dup-a", "dup-b", "case-a", "case-b", "case-c"} {
		if a := s.call(hc, "GET", "/admin/v1/orgs/"+slug, nil); a.Status != http.StatusNotFound {
			t.Errorf("org %s: %d, want 404", slug, a.Status)
		}
	}
	if a := s.call(hc, "GET", "/admin/v1/clients/"+id, nil); a.json(t)["rate_limit_per_minute"] != 120.0 {
		t.Errorf("rate limit after refused bodies: %s", a.Body)
	}
	if a := s.call(hc, "GET", "/admin/v1/clients?org=strict", nil); len(a.json(t)["items"].([]any)) != 1 {
		t.Errorf("clients of strict: %s", a.Body)
	}
}

// TestNamesRefused: the admin API refuses a name holding a control or
// bidirectional formatting character (issue 27 point 7) for an
// organisation and a client, by the rule the CLI applies
// (clients.NameProblems), with 400 invalid_input; nothing is made.
func TestNamesRefused(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	if a := s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "names", "name": "Names", "environment": "live"}); a.Status != 201 {
		t.Fatalf("create org: %d %s", a.Status, a.Body)
	}
	for _, name := range []string{"Acme\nHealth", "Acme\r", "Acme \x1b[31mred", "Acme\a", "Acme \u202eevil", "Acme \u2067x\u2069", "Acme \u0085"} {
		for _, req := range []struct{ path string }{{"/admin/v1/orgs"}, {"/admin/v1/clients"}} {
			body := map[string]any{"slug": "hostile", "name": name, "environment": "live"}
			if req.path == "/admin/v1/clients" {
				body = map[string]any{"organization_slug": "names", "name": name, "audience": "pharma", "scopes": []string{}}
			}
			a := s.call(hc, "POST", req.path, body)
			if a.Status != http.StatusBadRequest || a.json(t)["code"] != "invalid_input" ||
				!strings.Contains(a.json(t)["detail"].(string), "control and bidirectional formatting characters are not allowed") {
				t.Errorf("POST %s name %q: %d %s, want 400 invalid_input", req.path, name, a.Status, a.Body)
			}
		}
	}
	if a := s.call(hc, "GET", "/admin/v1/orgs/hostile", nil); a.Status != http.StatusNotFound {
		t.Errorf("hostile org: %d", a.Status)
	}
	if a := s.call(hc, "GET", "/admin/v1/clients?org=names", nil); len(a.json(t)["items"].([]any)) != 0 {
		t.Errorf("clients of names: %s", a.Body)
	}
}
