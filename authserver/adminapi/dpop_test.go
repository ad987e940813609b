package adminapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/dpop/dpoptest"
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

// TestDPoPOperatorCall: an operator's DPoP-bound token (RFC 9449 section
// 5) calls the admin API with the DPoP scheme and a proof (section 7.1);
// a proof of another key, and the token sent as Bearer, are refused 401
// with a DPoP challenge while the owner keeps working. Every answer is
// checked against the admin OpenAPI document (call).
func TestDPoPOperatorCall(t *testing.T) {
	s := newStack(t, options{})
	op, secret, _ := s.operator(true)
	owner, thief := dpoptest.NewKey(), dpoptest.NewKey()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.tokens.URL+tokenserver.PathToken,
		strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("DPoP", owner.Sign(dpoptest.Proof{Method: http.MethodPost, URI: testIssuer + tokenserver.PathToken}))
	req.SetBasicAuth(op.ID, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	err = json.NewDecoder(resp.Body).Decode(&tr)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || tr.TokenType != "DPoP" {
		t.Fatalf("operator's DPoP token: %d %+v %v", resp.StatusCode, tr, err)
	}
	const path = "/admin/v1/orgs"
	call := func(scheme string, key *dpoptest.Key) answer {
		t.Helper()
		h := []string{"Authorization", scheme + " " + tr.AccessToken}
		if key != nil {
			h = append(h, "DPoP", key.Sign(dpoptest.Proof{Method: http.MethodGet, URI: s.admin.URL + path, AccessToken: tr.AccessToken}))
		}
		return s.call(nil, http.MethodGet, path, nil, h...)
	}
	if a := call("DPoP", owner); a.Status != http.StatusOK {
		t.Fatalf("the owner's call: %d %s", a.Status, a.Body)
	}
	// The challenges the document shows (components/responses/Unauthorized).
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Responses map[string]struct {
				Headers map[string]struct {
					Examples map[string]struct{ Value string } `json:"examples"`
				} `json:"headers"`
			} `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	documented := doc.Components.Responses["Unauthorized"].Headers["WWW-Authenticate"].Examples
	const algs = `algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`
	for _, c := range []struct {
		name, scheme string
		key          *dpoptest.Key
		example      string // the document's example of this challenge, if any
		challenge    string
		code, detail string
	}{
		{"a proof of another key", "DPoP", thief, "invalid_dpop_proof",
			`DPoP error="invalid_dpop_proof", error_description="the DPoP proof's key is not the key the access token is bound to", ` + algs,
			"invalid_dpop_proof", "the DPoP proof's key is not the key the access token is bound to"},
		{"the Bearer scheme", "Bearer", nil, "dpop_invalid_token", `DPoP error="invalid_token", ` + algs, "invalid_token", "the token is invalid or expired"},
		{"no proof", "DPoP", nil, "",
			`DPoP error="invalid_dpop_proof", error_description="a DPoP header is required", ` + algs,
			"invalid_dpop_proof", "a DPoP header is required"},
	} {
		a := call(c.scheme, c.key)
		var p map[string]any
		_ = json.Unmarshal(a.Body, &p)
		if a.Status != http.StatusUnauthorized || a.Header.Get("WWW-Authenticate") != c.challenge ||
			a.Header.Get("Content-Type") != "application/problem+json" || p["code"] != c.code || p["detail"] != c.detail || p["status"] != 401.0 {
			t.Errorf("%s: %d %q %q %s; want 401 %q, code %s, detail %q", c.name, a.Status, a.Header.Get("WWW-Authenticate"),
				a.Header.Get("Content-Type"), a.Body, c.challenge, c.code, c.detail)
		}
		if ex, ok := documented[c.example]; c.example != "" && (!ok || ex.Value != a.Header.Get("WWW-Authenticate")) {
			t.Errorf("%s: the document's example %s is %q, the API sent %q", c.name, c.example, ex.Value, a.Header.Get("WWW-Authenticate"))
		}
		if a := call("DPoP", owner); a.Status != http.StatusOK {
			t.Fatalf("the owner's call after %s: %d %s", c.name, a.Status, a.Body)
		}
	}
}
