package adminapi_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
)

// TestDPoPBoundClient: POST /admin/v1/clients with dpop_bound_access_tokens
// true (RFC 9449 section 5.2) makes a client the token endpoint refuses a
// token without a DPoP proof (400 invalid_dpop_proof); the client shows
// the member, in the answer and in GET; a client created without it shows
// no such member, as before.
func TestDPoPBoundClient(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	if a := s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "acme-health", "name": "Acme Health", "environment": "live"}); a.Status != 201 {
		t.Fatalf("create org: %d %s", a.Status, a.Body)
	}
	a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"organization_slug": "acme-health", "name": "EHR", "audience": "hospital",
		"scopes": []string{"patients.read"}, "dpop_bound_access_tokens": true})
	if a.Status != 201 || a.json(t)["dpop_bound_access_tokens"] != true {
		t.Fatalf("create bound client: %d %s", a.Status, a.Body)
	}
	id, secret := a.json(t)["client_id"].(string), a.json(t)["client_secret"].(string)
	if g := s.call(hc, "GET", "/admin/v1/clients/"+id, nil); g.Status != 200 || g.json(t)["dpop_bound_access_tokens"] != true {
		t.Fatalf("show bound client: %d %s", g.Status, g.Body)
	}
	status, body := s.postForm(tokenserver.PathToken, url.Values{"grant_type": {"client_credentials"}}, id, secret)
	if status != 400 || string(body) != `{"error":"invalid_dpop_proof","error_description":"a DPoP proof is required: this client is registered for DPoP-bound access tokens only"}` {
		t.Fatalf("bound client's token request without a proof: %d %s", status, body)
	}

	// PUT .../dpop-bound changes it both ways.
	if a := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/dpop-bound", map[string]any{"dpop_bound_access_tokens": false}); a.Status != 200 ||
		strings.Contains(string(a.Body), "dpop_bound_access_tokens") {
		t.Fatalf("dpop-bound false: %d %s", a.Status, a.Body)
	}
	if st := s.tokenStatus(id, secret); st != 200 {
		t.Fatalf("unbound client's token request: %d", st)
	}
	if a := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/dpop-bound", map[string]any{"dpop_bound_access_tokens": true}); a.Status != 200 || a.json(t)["dpop_bound_access_tokens"] != true {
		t.Fatalf("dpop-bound true: %d %s", a.Status, a.Body)
	}
	if st := s.tokenStatus(id, secret); st != 400 {
		t.Fatalf("bound again, a token request without a proof: %d, want 400", st)
	}
	for _, bad := range []any{map[string]any{}, map[string]any{"dpop_bound_access_tokens": "true"}, map[string]any{"dpop_bound_access_tokens": nil}} {
		if a := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/dpop-bound", bad); a.Status != 400 {
			t.Errorf("dpop-bound %v: %d %s, want 400", bad, a.Status, a.Body)
		}
	}

	for _, v := range []any{false, nil} {
		req := map[string]any{"organization_slug": "acme-health", "name": "Plain", "audience": "hospital", "scopes": []string{"patients.read"}}
		if v != nil {
			req["dpop_bound_access_tokens"] = v
		}
		a := s.call(hc, "POST", "/admin/v1/clients", req)
		if a.Status != 201 || strings.Contains(string(a.Body), "dpop_bound_access_tokens") {
			t.Fatalf("create client (dpop_bound_access_tokens %v): %d %s", v, a.Status, a.Body)
		}
		if st := s.tokenStatus(a.json(t)["client_id"].(string), a.json(t)["client_secret"].(string)); st != 200 {
			t.Fatalf("unbound client's token request: %d", st)
		}
	}
	if a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"organization_slug": "acme-health", "name": "Bad", "audience": "hospital",
		"scopes": []string{"patients.read"}, "dpop_bound_access_tokens": "yes"}); a.Status != 400 {
		t.Fatalf("dpop_bound_access_tokens \"yes\": %d %s, want 400", a.Status, a.Body)
	}
}
