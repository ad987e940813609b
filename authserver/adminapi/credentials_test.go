package adminapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestTwoSecrets: a rotation without downtime through the API. The added
// secret and the old one both get tokens; retiring the old one refuses it
// and kills its tokens at once (introspection says so), the new one's
// live on; the only secret cannot be retired, nor a third added.
func TestTwoSecrets(t *testing.T) {
	s := newStack(t, options{})
	op, _, hc := s.operator(false)
	id, secret1 := s.newClient(hc, "two-secrets")
	_, tok1 := s.token(id, secret1)

	a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil)
	v := a.json(t)
	secret2, _ := v["client_secret"].(string)
	if a.Status != 201 || v["secret_id"] != 2.0 || !secretRE.MatchString(secret2) || secret2 == secret1 ||
		a.Header.Get("Location") != "/admin/v1/clients/"+id+"/secrets/2" || a.Header.Get("Cache-Control") != "no-store" ||
		v["client_id"] != id || v["credential_generation"] != 1.0 || secretIDs(t, a.Body) != "1,2" {
		t.Fatalf("add secret: %d %v %s", a.Status, a.Header, a.Body)
	}
	status2, tok2 := s.token(id, secret2)
	if status1, _ := s.token(id, secret1); status1 != 200 || status2 != 200 {
		t.Fatalf("token requests with both secrets: %d, %d; want 200, 200", status1, status2)
	}
	if !s.active(id, secret2, tok1) || !s.active(id, secret1, tok2) {
		t.Fatal("both secrets' tokens must be active while both secrets are held")
	}
	if a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil); a.Status != 409 || a.json(t)["code"] != "conflict" ||
		a.json(t)["detail"] != "client "+id+" already holds two secrets: retire one first" {
		t.Fatalf("a third secret: %d %s", a.Status, a.Body)
	}

	a = s.call(hc, "DELETE", "/admin/v1/clients/"+id+"/secrets/1", nil)
	if a.Status != 200 || a.json(t)["client_id"] != id || secretIDs(t, a.Body) != "2" || strings.Contains(string(a.Body), `"client_secret":`) {
		t.Fatalf("retire secret 1: %d %s", a.Status, a.Body)
	}
	if st, _ := s.token(id, secret1); st != 401 {
		t.Fatalf("the retired secret at the token endpoint: %d", st)
	}
	if s.active(id, secret2, tok1) {
		t.Fatal("the retired secret's token is still active")
	}
	if !s.active(id, secret2, tok2) {
		t.Fatal("the remaining secret's token died with the other")
	}
	if got := s.call(hc, "GET", "/admin/v1/clients/"+id, nil); secretIDs(t, got.Body) != "2" {
		t.Fatalf("show after retire: %s", got.Body)
	}

	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/secrets/2", 409, "conflict"}, // the only secret
		{"/secrets/1", 404, "not_found"},
		{"/secrets/9", 404, "not_found"},
		{"/secrets/0", 404, "not_found"},
		{"/secrets/abc", 404, "not_found"},
	} {
		a := s.call(hc, "DELETE", "/admin/v1/clients/"+id+tc.path, nil)
		if a.Status != tc.status || a.json(t)["code"] != tc.code {
			t.Errorf("DELETE %s: %d %s, want %d %s", tc.path, a.Status, a.Body, tc.status, tc.code)
		}
	}
	if a := s.call(hc, "DELETE", "/admin/v1/clients/svc_aaaaaaaaaaaaaaaaaaaaaaaa/secrets/1", nil); a.Status != 404 {
		t.Errorf("retire a secret of an unknown client: %d %s", a.Status, a.Body)
	}
	if a := s.call(hc, "POST", "/admin/v1/clients/svc_aaaaaaaaaaaaaaaaaaaaaaaa/secrets", nil); a.Status != 404 || a.json(t)["code"] != "not_found" {
		t.Errorf("add a secret to an unknown client: %d %s", a.Status, a.Body)
	}
	if a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", map[string]any{}); a.Status != 400 || a.json(t)["code"] != "invalid_request" {
		t.Errorf("add a secret with a body: %d %s", a.Status, a.Body)
	}

	// The client's audit names the operator of each change; the admin
	// audit has every call, refusals included.
	a = s.call(hc, "GET", "/admin/v1/clients/"+id+"/audit", nil)
	var audit struct {
		Items []struct{ Event, Detail string } `json:"items"`
	}
	_ = json.Unmarshal(a.Body, &audit)
	var events []string
	for _, e := range audit.Items {
		events = append(events, e.Event)
		if e.Event != "client.created" && !strings.Contains(e.Detail, "operator="+op.ID) {
			t.Errorf("audit entry %s names no operator: %q", e.Event, e.Detail)
		}
	}
	if got := strings.Join(events, " "); got != "client.created client.add_secret client.retire_secret" {
		t.Fatalf("client audit: %s", got)
	}
	routes := s.adminAuditRoutes(hc)
	for _, want := range []string{"POST /admin/v1/clients/{client_id}/secrets 201", "POST /admin/v1/clients/{client_id}/secrets 409",
		"DELETE /admin/v1/clients/{client_id}/secrets/{secret_id} 200", "DELETE /admin/v1/clients/{client_id}/secrets/{secret_id} 409",
		"DELETE /admin/v1/clients/{client_id}/secrets/{secret_id} 404"} {
		if !strings.Contains(routes, want+" ") {
			t.Errorf("admin audit lacks %q:\n%s", want, routes)
		}
	}
}

// TestAddSecretIdempotent: a retried add-secret with its Idempotency-Key
// adds one secret and answers the same one, which works; the record holds
// no secret in the clear.
func TestAddSecretIdempotent(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	id, _ := s.newClient(hc, "idem-secret")
	key := "9c8b7a6f-5e4d-4c3b-8a29-1f0e9d8c7b6a"
	first := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil, "Idempotency-Key", key)
	second := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil, "Idempotency-Key", key)
	if first.Status != 201 || second.Status != 201 || string(first.Body) != string(second.Body) ||
		second.Header.Get("Idempotent-Replayed") != "true" || second.Header.Get("Location") != "/admin/v1/clients/"+id+"/secrets/2" {
		t.Fatalf("add secret and its retry: %d %s / %d %v %s", first.Status, first.Body, second.Status, second.Header, second.Body)
	}
	if got := s.call(hc, "GET", "/admin/v1/clients/"+id, nil); secretIDs(t, got.Body) != "1,2" {
		t.Fatalf("after a retried add: %s", got.Body)
	}
	secret := second.json(t)["client_secret"].(string)
	if st := s.tokenStatus(id, secret); st != 200 {
		t.Fatalf("the replayed secret at the token endpoint: %d", st)
	}
	// The same key for another client's add is another request.
	other, _ := s.newClient(hc, "idem-secret-2")
	if a := s.call(hc, "POST", "/admin/v1/clients/"+other+"/secrets", nil, "Idempotency-Key", key); a.Status != 422 || a.json(t)["code"] != "idempotency_key_reused" {
		t.Fatalf("key reused on another client: %d %s", a.Status, a.Body)
	}
	// A refused add (a third secret) frees its key.
	k2 := "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	if a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil, "Idempotency-Key", k2); a.Status != 409 {
		t.Fatalf("a third secret: %d %s", a.Status, a.Body)
	}
	s.call(hc, "DELETE", "/admin/v1/clients/"+id+"/secrets/1", nil)
	if a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil, "Idempotency-Key", k2); a.Status != 201 || a.json(t)["secret_id"] != 3.0 {
		t.Fatalf("the freed key after a retire: %d %s", a.Status, a.Body)
	}
	keys, err := redistest.Keys(t.Context(), s.rdb, s.prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		dump, _ := s.rdb.Dump(t.Context(), k).Result()
		if strings.Contains(dump, secret) || strings.Contains(dump, secret[7:]) {
			t.Fatalf("key %s holds the added secret", k)
		}
	}
}

// TestUnconfirmedSecrets: on a primary whose replicas do not confirm, an
// added secret is answered 202 with the secret (it works now) and a
// warning, and its retry with the same key replays it; a retire is 202
// with the client.
func TestUnconfirmedSecrets(t *testing.T) {
	s := newStack(t, options{confirm: redisconn.Confirmation{Replicas: 2, Timeout: 50 * time.Millisecond}})
	_, _, hc := s.operator(false)
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "unconf-sec", "name": "U", "environment": "live"})
	c := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "unconf-sec", "name": "EHR", "audience": "pharma"}).json(t)
	id := c["client_id"].(string)
	key := "22222222-3333-4444-8555-666666666666"
	a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil, "Idempotency-Key", key)
	v := a.json(t)
	warning, _ := v["warning"].(string)
	if a.Status != 202 || v["secret_id"] != 2.0 || !secretRE.MatchString(fmt.Sprint(v["client_secret"])) ||
		!strings.Contains(warning, "confirmed by 0 of the 2 replica(s) required") {
		t.Fatalf("unconfirmed add: %d %s", a.Status, a.Body)
	}
	if st := s.tokenStatus(id, v["client_secret"].(string)); st != 200 {
		t.Fatalf("the unconfirmed secret: %d", st)
	}
	if again := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil, "Idempotency-Key", key); again.Status != 202 || string(again.Body) != string(a.Body) {
		t.Fatalf("retry: %d %s", again.Status, again.Body)
	}
	r := s.call(hc, "DELETE", "/admin/v1/clients/"+id+"/secrets/1", nil)
	if r.Status != 202 || secretIDs(t, r.Body) != "2" || r.json(t)["warning"] == nil {
		t.Fatalf("unconfirmed retire: %d %s", r.Status, r.Body)
	}
	if st := s.tokenStatus(id, c["client_secret"].(string)); st != 401 {
		t.Fatalf("the retired secret: %d", st)
	}
}

// TestKeyClient: a private_key_jwt client made through the API gets no
// secret and gets tokens with assertions signed by its keys (RFC 7523
// section 2.2); rotate-keys replaces the keys and kills earlier tokens;
// secret operations refuse it, and key operations a secret client.
func TestKeyClient(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "keyed", "name": "Keyed", "environment": "live"})
	k1 := assertiontest.NewKey(t, "k1", jwa.ES256())
	a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"organization_slug": "keyed", "name": "EHR", "audience": "hospital",
		"scopes": []string{"patients.read"}, "auth_method": "private_key_jwt", "jwks": publicSet(t, k1)})
	v := a.json(t)
	id, _ := v["client_id"].(string)
	if a.Status != 201 || a.Header.Get("Location") != "/admin/v1/clients/"+id || v["auth_method"] != "private_key_jwt" ||
		v["keys_version"] != 1.0 || secretIDs(t, a.Body) != "" || strings.Contains(string(a.Body), `"client_secret":`) {
		t.Fatalf("create a key client: %d %s", a.Status, a.Body)
	}
	st, tok := s.tokenForm(assertionForm(t, k1, id), "", "")
	if st != 200 {
		t.Fatalf("a token with a signed assertion: %d", st)
	}
	// The same assertion again is a replay (jti is single use).
	form := assertionForm(t, k1, id)
	s.tokenForm(form, "", "")
	if st, _ := s.tokenForm(form, "", ""); st != 401 {
		t.Fatalf("a replayed assertion: %d", st)
	}

	k2 := assertiontest.NewKey(t, "k2", jwa.EdDSA())
	a = s.call(hc, "PUT", "/admin/v1/clients/"+id+"/keys", map[string]any{"jwks": publicSet(t, k2)})
	if a.Status != 200 || a.json(t)["keys_version"] != 2.0 || a.json(t)["credential_generation"] != 2.0 {
		t.Fatalf("rotate keys: %d %s", a.Status, a.Body)
	}
	if st, _ := s.tokenForm(assertionForm(t, k1, id), "", ""); st != 401 {
		t.Fatalf("the old key after rotate-keys: %d", st)
	}
	st, tok2 := s.tokenForm(assertionForm(t, k2, id), "", "")
	if st != 200 {
		t.Fatalf("the new key after rotate-keys: %d", st)
	}
	if s.activeByAssertion(k2, id, tok) || !s.activeByAssertion(k2, id, tok2) {
		t.Fatal("after rotate-keys the earlier token must be inactive and the new one active")
	}
	// To a URL: https, then back to a set.
	a = s.call(hc, "PUT", "/admin/v1/clients/"+id+"/keys", map[string]any{"jwks_uri": "https://partner.example/jwks.json"})
	if a.Status != 200 || a.json(t)["jwks_uri"] != "https://partner.example/jwks.json" || a.json(t)["keys_version"] != 3.0 {
		t.Fatalf("rotate keys to a jwks_uri: %d %s", a.Status, a.Body)
	}

	secretID, _ := s.newClient(hc, "keyed")
	for _, tc := range []struct {
		name, method, path string
		body               any
	}{
		{"add a secret to a key client", "POST", "/admin/v1/clients/" + id + "/secrets", nil},
		{"rotate a key client's secret", "POST", "/admin/v1/clients/" + id + "/rotate-secret", nil},
		{"retire a key client's secret", "DELETE", "/admin/v1/clients/" + id + "/secrets/1", nil},
		{"rotate a secret client's keys", "PUT", "/admin/v1/clients/" + secretID + "/keys", map[string]any{"jwks": publicSet(t, k2)}},
	} {
		a := s.call(hc, tc.method, tc.path, tc.body)
		if a.Status != 409 || a.json(t)["code"] != "conflict" {
			t.Errorf("%s: %d %s, want 409 conflict", tc.name, a.Status, a.Body)
		}
	}
	if a := s.call(hc, "PUT", "/admin/v1/clients/svc_aaaaaaaaaaaaaaaaaaaaaaaa/keys", map[string]any{"jwks": publicSet(t, k2)}); a.Status != 404 {
		t.Errorf("rotate an unknown client's keys: %d %s", a.Status, a.Body)
	}
	s.call(hc, "POST", "/admin/v1/clients/"+id+"/revoke", nil)
	if a := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/keys", map[string]any{"jwks": publicSet(t, k1)}); a.Status != 409 || a.json(t)["code"] != "revoked" {
		t.Errorf("rotate a revoked client's keys: %d %s", a.Status, a.Body)
	}
}

// TestJWKSURIPolicy: an http jwks_uri is refused unless the server allows
// http (JWKS_URL_ALLOW_HTTP); https always fits.
func TestJWKSURIPolicy(t *testing.T) {
	body := func(uri string) map[string]any {
		return map[string]any{"organization_slug": "uris", "name": "EHR", "audience": "pharma", "scopes": []string{}, "auth_method": "private_key_jwt", "jwks_uri": uri}
	}
	for _, allow := range []bool{false, true} {
		s := newStack(t, options{jwksAllowHTTP: allow})
		_, _, hc := s.operator(false)
		s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "uris", "name": "URIs", "environment": "live"})
		a := s.call(hc, "POST", "/admin/v1/clients", body("https://partner.example/jwks.json"))
		if a.Status != 201 || a.json(t)["jwks_uri"] != "https://partner.example/jwks.json" {
			t.Fatalf("allow http %v, https: %d %s", allow, a.Status, a.Body)
		}
		a = s.call(hc, "POST", "/admin/v1/clients", body("http://partner.example/jwks.json"))
		switch {
		case allow && a.Status != 201:
			t.Fatalf("http allowed: %d %s", a.Status, a.Body)
		case !allow && (a.Status != 400 || !strings.Contains(a.json(t)["detail"].(string), "must be https (the operator may allow http: JWKS_URL_ALLOW_HTTP=true)")):
			t.Fatalf("http refused: %d %s", a.Status, a.Body)
		}
		id := a.json(t)["client_id"]
		if allow {
			if a := s.call(hc, "PUT", fmt.Sprintf("/admin/v1/clients/%s/keys", id), map[string]any{"jwks_uri": "http://p.example/jwks.json"}); a.Status != 200 {
				t.Fatalf("rotate to http, allowed: %d %s", a.Status, a.Body)
			}
		}
	}
}

// TestJWKSURIAddresses (issue 27 point 5): a jwks_uri whose host resolves
// to an address the token service would not fetch from is refused at
// registration (create and rotate-keys), saying which address and why,
// unless the operator allows private addresses (JWKS_URL_ALLOW_PRIVATE).
func TestJWKSURIAddresses(t *testing.T) {
	for _, allow := range []bool{false, true} {
		s := newStack(t, options{jwksAllowPrivate: allow})
		_, _, hc := s.operator(false)
		s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "addrs", "name": "Addresses", "environment": "live"})
		a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "addrs", "name": "EHR", "audience": "pharma",
			"auth_method": "private_key_jwt", "jwks_uri": "https://partner.example/jwks.json"})
		if a.Status != 201 {
			t.Fatalf("a public host: %d %s", a.Status, a.Body)
		}
		id := a.json(t)["client_id"]
		for _, c := range []struct{ uri, why string }{
			{"https://internal.example/jwks.json", `address 10.0.0.9 is private-use (RFC 1918) (JWKS_URL_ALLOW_PRIVATE=true allows it)`},
			{"https://127.0.0.1:8443/jwks.json", "address 127.0.0.1 is loopback"},
			{"https://[64:ff9b::a9fe:a9fe]/jwks.json", "NAT64 of 169.254.169.254: link-local"},
			{"https://100.64.0.1/jwks.json", "RFC 6598"},
		} {
			create := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "addrs", "name": "EHR", "audience": "pharma",
				"auth_method": "private_key_jwt", "jwks_uri": c.uri})
			rotate := s.call(hc, "PUT", fmt.Sprintf("/admin/v1/clients/%s/keys", id), map[string]any{"jwks_uri": c.uri})
			for what, a := range map[string]answer{"create": create, "rotate": rotate} {
				if allow {
					if a.Status/100 != 2 {
						t.Errorf("%s %s, private allowed: %d %s", what, c.uri, a.Status, a.Body)
					}
					continue
				}
				if a.Status != 400 || a.json(t)["type"] == nil || !strings.Contains(a.json(t)["detail"].(string), c.why) {
					t.Errorf("%s %s: %d %s, want 400 saying %q", what, c.uri, a.Status, a.Body, c.why)
				}
			}
		}
		if a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "addrs", "name": "EHR", "audience": "pharma",
			"auth_method": "private_key_jwt", "jwks_uri": "https://nowhere.example/jwks.json"}); !allow && (a.Status != 400 || !strings.Contains(a.json(t)["detail"].(string), "does not resolve")) {
			t.Errorf("a host that does not resolve: %d %s", a.Status, a.Body)
		}
	}
}

// TestKeyProblems: bad keys get one 400 listing every problem; a request
// of the wrong shape gets invalid_request.
func TestKeyProblems(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "badkeys", "name": "Bad keys", "environment": "live"})
	good := assertiontest.NewKey(t, "good", jwa.ES256())
	private := assertiontest.NewKey(t, "private", jwa.ES256())
	privJWK, err := jwk.Import(private.Signer)
	if err != nil {
		t.Fatal(err)
	}
	_ = privJWK.Set(jwk.KeyIDKey, "private")
	noKid := assertiontest.NewKey(t, "", jwa.EdDSA())
	bad := map[string]any{"keys": []any{privJWK, noKid.PublicJWK(t), good.PublicJWK(t), good.PublicJWK(t),
		map[string]any{"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}}}
	create := func(extra map[string]any) map[string]any {
		b := map[string]any{"organization_slug": "badkeys", "name": "EHR", "audience": "pharma", "scopes": []string{}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	id, _ := s.newClient(hc, "badkeys")
	keyed := s.call(hc, "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "private_key_jwt", "jwks": publicSet(t, good)})).json(t)["client_id"].(string)

	// Every problem of the set, and of the rest of the request, at once.
	wantAll := []string{`key "private": only public keys`, `key 2: a "kid" is required`, `key 4: "kid" "good" is repeated`, `key "hmac": only public keys`}
	for _, tc := range []struct {
		name, method, path string
		body               any
		want               []string
	}{
		{"create", "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "private_key_jwt", "jwks": bad, "name": ""}), append(wantAll, "name: 1-200 characters required")},
		{"rotate", "PUT", "/admin/v1/clients/" + keyed + "/keys", map[string]any{"jwks": bad}, wantAll},
	} {
		a := s.call(hc, tc.method, tc.path, tc.body)
		detail, _ := a.json(t)["detail"].(string)
		if a.Status != 400 || a.json(t)["code"] != "invalid_input" {
			t.Errorf("%s with bad keys: %d %s", tc.name, a.Status, a.Body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(detail, w) {
				t.Errorf("%s: detail %q lacks %q", tc.name, detail, w)
			}
		}
	}

	cases := []struct {
		name, method, path string
		body               any
		status             int
		code, detail       string
	}{
		{"both jwks and jwks_uri", "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "private_key_jwt", "jwks": publicSet(t, good), "jwks_uri": "https://p.example/k"}), 400, "invalid_input", "give a JWK set or a jwks_uri, not both"},
		{"neither", "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "private_key_jwt"}), 400, "invalid_input", "needs a JWK set or a jwks_uri"},
		{"empty set", "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "private_key_jwt", "jwks": map[string]any{"keys": []any{}}}), 400, "invalid_input", "0 keys: give 1 to 10"},
		{"not a set", "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "private_key_jwt", "jwks": []any{}}), 400, "invalid_request", `"jwks" must be a JWK set object`},
		{"keys for a secret client", "POST", "/admin/v1/clients", create(map[string]any{"jwks": publicSet(t, good)}), 400, "invalid_request", "jwks and jwks_uri are for auth_method"},
		{"unknown method", "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "tls"}), 400, "invalid_request", `auth_method "tls"`},
		{"relative uri", "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "private_key_jwt", "jwks_uri": "/jwks.json"}), 400, "invalid_input", "not an absolute URL"},
		{"rotate without keys", "PUT", "/admin/v1/clients/" + keyed + "/keys", map[string]any{}, 400, "invalid_input", "needs a JWK set or a jwks_uri"},
		{"rotate with no body", "PUT", "/admin/v1/clients/" + keyed + "/keys", nil, 400, "invalid_request", "a JSON object body is required"},
		{"rotate with an unknown member", "PUT", "/admin/v1/clients/" + keyed + "/keys", map[string]any{"keys": []any{}}, 400, "invalid_request", "unknown field"},
		{"rotate a secret client with bad keys", "PUT", "/admin/v1/clients/" + id + "/keys", map[string]any{"jwks_uri": "ftp://p.example/k"}, 400, "invalid_input", "must be https"},
	}
	for _, tc := range cases {
		a := s.call(hc, tc.method, tc.path, tc.body)
		if a.Status != tc.status || a.json(t)["code"] != tc.code || !strings.Contains(fmt.Sprint(a.json(t)["detail"]), tc.detail) {
			t.Errorf("%s: %d %s, want %d %s %q", tc.name, a.Status, a.Body, tc.status, tc.code, tc.detail)
		}
	}
	if n := strings.Count(string(s.call(hc, "GET", "/admin/v1/clients?org=badkeys", nil).Body), `"client_id"`); n != 2 {
		t.Fatalf("%d clients after refused creates, want 2", n)
	}
}

// TestCredentialWritesNeedWrite: a read-only operator is refused every
// new change, and each refusal is audited.
func TestCredentialWritesNeedWrite(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	reader, _, ro := s.operator(true)
	id, _ := s.newClient(hc, "readonly")
	k := assertiontest.NewKey(t, "k", jwa.ES256())
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "readonly", "name": "x", "audience": "pharma", "auth_method": "private_key_jwt", "jwks": publicSet(t, k)}},
		{"POST", "/admin/v1/clients/" + id + "/secrets", nil},
		{"DELETE", "/admin/v1/clients/" + id + "/secrets/1", nil},
		{"PUT", "/admin/v1/clients/" + id + "/keys", map[string]any{"jwks": publicSet(t, k)}},
	} {
		a := s.call(ro, tc.method, tc.path, tc.body)
		if a.Status != 403 || a.json(t)["code"] != "insufficient_scope" || a.Header.Get("WWW-Authenticate") != `Bearer realm="admin", error="insufficient_scope", scope="admin.write"` {
			t.Errorf("read-only %s %s: %d %s", tc.method, tc.path, a.Status, a.Body)
		}
	}
	if got := s.call(hc, "GET", "/admin/v1/clients/"+id, nil); secretIDs(t, got.Body) != "1" {
		t.Fatalf("refused writes changed the client: %s", got.Body)
	}
	routes := s.adminAuditRoutes(hc)
	for _, want := range []string{"POST /admin/v1/clients/{client_id}/secrets 403 " + reader.ID, "DELETE /admin/v1/clients/{client_id}/secrets/{secret_id} 403 " + reader.ID, "PUT /admin/v1/clients/{client_id}/keys 403 " + reader.ID} {
		if !strings.Contains(routes, want) {
			t.Errorf("admin audit lacks %q:\n%s", want, routes)
		}
	}
}

// newClient creates org (once) and a pharma secret client in it through
// the API; it returns the client id and secret.
func (s *stack) newClient(hc *http.Client, org string) (string, string) {
	s.t.Helper()
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": org, "name": "Org " + org, "environment": "live"})
	a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": org, "name": "EHR", "audience": "pharma"})
	if a.Status != 201 {
		s.t.Fatalf("create client: %d %s", a.Status, a.Body)
	}
	v := a.json(s.t)
	return v["client_id"].(string), v["client_secret"].(string)
}

// adminAuditRoutes lists the admin audit as "ROUTE STATUS OPERATOR" lines.
func (s *stack) adminAuditRoutes(hc *http.Client) string {
	s.t.Helper()
	a := s.call(hc, "GET", "/admin/v1/audit?limit=500", nil)
	var trail struct {
		Items []struct {
			Route, Operator string
			Status          int
		} `json:"items"`
	}
	if err := json.Unmarshal(a.Body, &trail); err != nil || a.Status != 200 {
		s.t.Fatalf("admin audit: %d %s", a.Status, a.Body)
	}
	var b strings.Builder
	for _, e := range trail.Items {
		fmt.Fprintf(&b, "%s %d %s\n", e.Route, e.Status, e.Operator)
	}
	return strings.ReplaceAll(b.String(), " \n", "\n")
}

// secretIDs lists a client answer's secrets[].secret_id, comma-separated.
func secretIDs(t *testing.T, body []byte) string {
	t.Helper()
	var c struct {
		Secrets []struct {
			ID int64 `json:"secret_id"`
		} `json:"secrets"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var ids []string
	for _, s := range c.Secrets {
		ids = append(ids, fmt.Sprint(s.ID))
	}
	return strings.Join(ids, ",")
}

// publicSet is the JWK set of k's public key, as a JSON value.
func publicSet(t *testing.T, k assertiontest.Key) map[string]any {
	t.Helper()
	return map[string]any{"keys": []any{k.PublicJWK(t)}}
}

// assertionForm is a token request of client id authenticated by an
// assertion k signs (RFC 7523 sections 2.2 and 3): iss = sub = id, aud the
// issuer, a fresh jti.
func assertionForm(t *testing.T, k assertiontest.Key, id string) url.Values {
	t.Helper()
	return url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {tokenserver.AssertionType}, "client_assertion": {k.Assertion(t, id, testIssuer)}}
}

// activeByAssertion introspects token as the key client id.
func (s *stack) activeByAssertion(k assertiontest.Key, id, token string) bool {
	s.t.Helper()
	form := url.Values{"token": {token}, "client_assertion_type": {tokenserver.AssertionType}, "client_assertion": {k.Assertion(s.t, id, testIssuer)}}
	status, body := s.postForm(tokenserver.PathIntrospect, form, "", "")
	var v struct {
		Active bool `json:"active"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &v) != nil {
		s.t.Fatalf("introspection: %d %s", status, body)
	}
	return v.Active
}

// TestPutDeleteIdempotent: a PUT or a DELETE sent again with its
// Idempotency-Key replays its first answer (Idempotent-Replayed), so a
// retried retire answers what the first did rather than 404, and the admin
// audit marks the replay; the same key for another body is 422.
func TestPutDeleteIdempotent(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	id, _ := s.newClient(hc, "idem-put")
	if a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/secrets", nil); a.Status != 201 {
		t.Fatalf("add a secret: %d %s", a.Status, a.Body)
	}
	key := "5d4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a"
	first := s.call(hc, "DELETE", "/admin/v1/clients/"+id+"/secrets/1", nil, "Idempotency-Key", key)
	second := s.call(hc, "DELETE", "/admin/v1/clients/"+id+"/secrets/1", nil, "Idempotency-Key", key)
	if first.Status != 200 || second.Status != 200 || string(first.Body) != string(second.Body) ||
		first.Header.Get("Idempotent-Replayed") != "" || second.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retire and its retry: %d %s / %d %v %s", first.Status, first.Body, second.Status, second.Header, second.Body)
	}
	if a := s.call(hc, "DELETE", "/admin/v1/clients/"+id+"/secrets/1", nil); a.Status == 200 {
		t.Fatalf("a retire without the key: %d %s, want a refusal (retired already)", a.Status, a.Body)
	}
	k2 := "6e5d4c3b-2a1f-4e0d-9c8b-7a6f5e4d3c2b"
	limit := map[string]any{"rate_limit_per_minute": 77}
	p1 := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/rate-limit", limit, "Idempotency-Key", k2)
	p2 := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/rate-limit", limit, "Idempotency-Key", k2)
	if p1.Status != 200 || string(p1.Body) != string(p2.Body) || p2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("set a limit and its retry: %d %s / %d %v %s", p1.Status, p1.Body, p2.Status, p2.Header, p2.Body)
	}
	if a := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/rate-limit", map[string]any{"rate_limit_per_minute": 78}, "Idempotency-Key", k2); a.Status != 422 || a.json(t)["code"] != "idempotency_key_reused" {
		t.Fatalf("the key for another limit: %d %s", a.Status, a.Body)
	}
	audit := s.call(hc, "GET", "/admin/v1/audit?limit=10", nil)
	var page struct {
		Items []struct {
			Method   string `json:"method"`
			Replayed bool   `json:"replayed"`
		} `json:"items"`
	}
	if err := json.Unmarshal(audit.Body, &page); err != nil {
		t.Fatal(err)
	}
	replays := map[string]int{}
	for _, e := range page.Items {
		if e.Replayed {
			replays[e.Method]++
		}
	}
	if replays["PUT"] != 1 || replays["DELETE"] != 1 {
		t.Fatalf("replays in the admin audit: %v\n%s", replays, audit.Body)
	}
}
