package adminapi_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
)

// TestMTLSClients: the admin API registers tls_client_auth clients by one
// certificate name and self_signed_tls_client_auth clients by their keys
// (RFC 8705 section 2), with no secret; a registration's problems come in
// one 400 listing every one; the client shows its method and name.
func TestMTLSClients(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "mtls", "name": "mTLS", "environment": "live"})
	create := func(extra map[string]any) map[string]any {
		b := map[string]any{"organization_slug": "mtls", "name": "Ward", "audience": "hospital", "scopes": []string{"patients.read"}}
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	a := s.call(hc, "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "tls_client_auth", "tls_client_auth_subject_dn": "CN=ward.example,O=St Elsewhere"}))
	got := a.json(t)
	if a.Status != 201 || got["auth_method"] != "tls_client_auth" || got["tls_client_auth_subject_dn"] != "CN=ward.example,O=St Elsewhere" ||
		got["client_secret"] != nil || len(got["secrets"].([]any)) != 0 {
		t.Fatalf("create tls_client_auth: %d %s", a.Status, a.Body)
	}
	if g := s.call(hc, "GET", "/admin/v1/clients/"+got["client_id"].(string), nil); g.json(t)["tls_client_auth_subject_dn"] != "CN=ward.example,O=St Elsewhere" {
		t.Fatalf("get: %s", g.Body)
	}
	// Its certificate name changes in place (PUT .../keys): the client
	// keeps its id, its keys_version rises.
	keysPath := "/admin/v1/clients/" + got["client_id"].(string) + "/keys"
	if r := s.call(hc, "PUT", keysPath, map[string]any{"tls_client_auth_san_dns": "ward2.example"}); r.Status != 200 ||
		r.json(t)["tls_client_auth_san_dns"] != "ward2.example" || r.json(t)["tls_client_auth_subject_dn"] != nil || r.json(t)["keys_version"] != float64(2) {
		t.Fatalf("PUT keys with a new certificate name: %d %s", r.Status, r.Body)
	}
	var jwks map[string]any
	_ = json.Unmarshal(clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "lab"}).JWKS(t, "tls"), &jwks)
	a = s.call(hc, "POST", "/admin/v1/clients", create(map[string]any{"auth_method": "self_signed_tls_client_auth", "jwks": jwks}))
	selfSigned := a.json(t)
	if a.Status != 201 || selfSigned["auth_method"] != "self_signed_tls_client_auth" || selfSigned["client_secret"] != nil {
		t.Fatalf("create self_signed_tls_client_auth: %d %s", a.Status, a.Body)
	}
	for _, tc := range []struct {
		name   string
		path   string
		body   map[string]any
		status int
		code   string
		detail string
	}{
		{"keys for a tls_client_auth client", keysPath, map[string]any{"jwks": jwks}, 409, "conflict",
			"client " + got["client_id"].(string) + " authenticates with a certificate its CA issued (tls_client_auth): it has no secret or keys; change its certificate name (rotate-keys with a tls_client_auth_* name), or revoke it"},
		{"a name for a self-signed client", "/admin/v1/clients/" + selfSigned["client_id"].(string) + "/keys", map[string]any{"tls_client_auth_san_dns": "x.example"}, 409, "conflict",
			"client " + selfSigned["client_id"].(string) + " authenticates with self_signed_tls_client_auth, not a certificate name (tls_client_auth only)"},
		{"a name and keys", keysPath, map[string]any{"tls_client_auth_san_dns": "x.example", "jwks": jwks}, 400, "invalid_request",
			"give a certificate name (tls_client_auth_san_dns, tls_client_auth) or keys (jwks, jwks_uri), not both"},
		{"a bad name", keysPath, map[string]any{"tls_client_auth_subject_dn": "not a DN"}, 400, "invalid_input",
			`invalid input: tls_client_auth_subject_dn "not a DN": not an RFC 4514 distinguished name (an attribute without "="), e.g. "CN=client.example.com,O=Example Hospital,C=NL"`},
	} {
		r := s.call(hc, "PUT", tc.path, tc.body)
		if j := r.json(t); r.Status != tc.status || j["code"] != tc.code || j["detail"] != tc.detail {
			t.Errorf("%s: %d %s\nwant %d %s %q", tc.name, r.Status, r.Body, tc.status, tc.code, tc.detail)
		}
	}

	for _, tc := range []struct {
		name   string
		body   map[string]any
		code   string
		detail string
	}{
		{"every problem at once", create(map[string]any{"name": "", "auth_method": "tls_client_auth", "jwks_uri": "https://k.example/jwks", "scopes": []string{"x"}}), "invalid_input",
			"invalid input: name: 1-200 characters required\nscope \"x\": unknown (known: programme.metrics.read, events.subscribe, patients.read, referrals.write)\n" +
				"keys (jwks, jwks_uri): only for private_key_jwt and self_signed_tls_client_auth, not tls_client_auth\n" +
				"a tls_client_auth client needs exactly one of tls_client_auth_subject_dn, tls_client_auth_san_dns, tls_client_auth_san_uri, tls_client_auth_san_ip, tls_client_auth_san_email (RFC 8705 section 2.1.2)"},
		{"two subjects", create(map[string]any{"auth_method": "tls_client_auth", "tls_client_auth_san_dns": "a.example", "tls_client_auth_san_ip": "192.0.2.1"}), "invalid_request",
			"give one of tls_client_auth_subject_dn, tls_client_auth_san_dns, tls_client_auth_san_uri, tls_client_auth_san_ip, tls_client_auth_san_email, not 2 (RFC 8705 section 2.1.2)"},
		{"bad values", create(map[string]any{"auth_method": "tls_client_auth", "tls_client_auth_san_ip": "192.0.2.300"}), "invalid_input",
			`invalid input: tls_client_auth_san_ip "192.0.2.300": not an IPv4 or IPv6 address`},
		{"self-signed without keys", create(map[string]any{"auth_method": "self_signed_tls_client_auth"}), "invalid_input",
			"invalid input: keys: a self_signed_tls_client_auth client needs a JWK set or a jwks_uri"},
		{"a subject for a secret client", create(map[string]any{"tls_client_auth_san_dns": "a.example"}), "invalid_request",
			`tls_client_auth_san_dns is for auth_method "tls_client_auth"`},
	} {
		a := s.call(hc, "POST", "/admin/v1/clients", tc.body)
		if j := a.json(t); a.Status != 400 || j["code"] != tc.code || j["detail"] != tc.detail {
			t.Errorf("%s: %d %s\nwant 400 %s %q", tc.name, a.Status, a.Body, tc.code, tc.detail)
		}
	}
}

// TestCertificateBoundOperatorToken: an operator token obtained over a
// connection presenting a client certificate is bound to it (RFC 8705
// section 3) and the admin API admits it over that certificate only:
// another one, or none, gets 401 invalid_token in the problem shape.
func TestCertificateBoundOperatorToken(t *testing.T) {
	s := newStack(t, options{mtls: true})
	op, secret, _ := s.operator(true)
	withCert := func(c *clientcerttest.Cert) *http.Client {
		tr := s.admin.Client().Transport.(*http.Transport).Clone()
		tr.TLSClientConfig = tr.TLSClientConfig.Clone()
		tr.TLSClientConfig.Certificates = nil
		if c != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{c.TLS()}
		}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}
	}
	mine := withCert(clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "operator"}))
	cc := clientcredentials.Config{ClientID: op.ID, ClientSecret: secret, TokenURL: s.tokens.URL + "/api/v1/oauth/token/"}
	tok, err := cc.Token(context.WithValue(t.Context(), oauth2.HTTPClient, mine))
	if err != nil {
		t.Fatal(err)
	}
	if a := s.call(mine, "GET", "/admin/v1/orgs", nil, "Authorization", "Bearer "+tok.AccessToken); a.Status != 200 {
		t.Fatalf("with its certificate: %d %s", a.Status, a.Body)
	}
	for name, hc := range map[string]*http.Client{"another certificate": withCert(clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "x"})), "none": withCert(nil)} {
		a := s.call(hc, "GET", "/admin/v1/orgs", nil, "Authorization", "Bearer "+tok.AccessToken)
		if j := a.json(t); a.Status != 401 || j["code"] != "invalid_token" ||
			j["detail"] != "the token is bound to a client certificate: call over a connection that presents that certificate" ||
			a.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %v %s", name, a.Status, a.Header, a.Body)
		}
	}
}
