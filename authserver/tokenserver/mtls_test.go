package tokenserver

import (
	"context"
	"crypto/tls"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// mtlsClient is an HTTP client of e's TLS instance presenting cert (nil:
// none).
func (e *env) mtlsClient(cert *clientcerttest.Cert) *http.Client {
	e.t.Helper()
	tr := e.tlsServer.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = tr.TLSClientConfig.Clone()
	tr.TLSClientConfig.Certificates = nil
	if cert != nil {
		tr.TLSClientConfig.Certificates = []tls.Certificate{cert.TLS()}
	}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// do sends a form to the path with client and reads the answer.
func do(t testing.TB, client *http.Client, target, body string, mods ...func(*http.Request)) reply {
	t.Helper()
	req := newRequest(t, http.MethodPost, target, formType, strings.NewReader(body), mods...)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: []byte(b.String())}
}

// mtlsClientOf registers a certificate client.
func (e *env) mtlsClientOf(spec clients.ClientSpec) string {
	e.t.Helper()
	spec.OrgSlug, spec.Name, spec.Audience, spec.Scopes = "acme", "mtls", clients.AudienceHospital, []string{clients.ScopePatientsRead}
	c, _, err := e.store.CreateClient(context.Background(), spec)
	if err != nil {
		e.t.Fatal(err)
	}
	return c.ID
}

const invalidClientBody = `{"error":"invalid_client","error_description":"Client authentication failed"}`

// TestMTLSClientAuthentication: tls_client_auth (RFC 8705 section 2.1)
// and self_signed_tls_client_auth (section 2.2) clients get tokens over a
// connection presenting their certificate and client_id alone, each token
// bound to it (cnf.x5t#S256, section 3.1), and introspection (with the
// same certificate) reports that cnf; a certificate of another CA, of
// another name, another self-signed key, or none, is invalid_client.
func TestMTLSClientAuthentication(t *testing.T) {
	t.Parallel()
	ca := clientcerttest.NewCA("Partner CA")
	e := newEnv(t, withMTLS(ca.Pool()))
	pki := e.mtlsClientOf(clients.ClientSpec{AuthMethod: clients.AuthTLSClient,
		TLSSubject: &clients.TLSSubject{Kind: clients.SubjectSANDNS, Value: "ward.example"}})
	self := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "lab"})
	ss := e.mtlsClientOf(clients.ClientSpec{AuthMethod: clients.AuthSelfSignedTLSClient,
		Keys: &clients.ClientKeySource{JWKS: self.JWKS(t, "tls")}})
	good := ca.Issue(clientcerttest.Names{CommonName: "ward", DNSNames: []string{"ward.example"}})

	for name, tc := range map[string]struct {
		id   string
		cert *clientcerttest.Cert
	}{"tls_client_auth": {pki, good}, "self_signed_tls_client_auth": {ss, self}} {
		client := e.mtlsClient(tc.cert)
		r := do(t, client, e.url+PathToken, form("grant_type", "client_credentials", "client_id", tc.id))
		tok := tokenReply(t, r, clients.ScopePatientsRead)
		_, claims := tokenParts(t, tok)
		want := map[string]any{"x5t#S256": clientcert.Thumbprint(tc.cert.Cert)}
		if got, _ := claims["cnf"].(map[string]any); len(got) != 1 || got["x5t#S256"] != want["x5t#S256"] {
			t.Fatalf("%s: cnf = %v, want %v", name, claims["cnf"], want)
		}
		in := do(t, client, e.url+PathIntrospect, form("token", tok, "client_id", tc.id))
		wantStatus(t, in, http.StatusOK)
		if !strings.HasSuffix(string(in.Body), `"token_type":"Bearer","exp":`+jsonNum(claims["exp"])+`,"iat":`+jsonNum(claims["iat"])+
			`,"sub":"`+tc.id+`","aud":"partner-api","iss":"https://auth.example.test","jti":"`+claims["jti"].(string)+`","cnf":{"x5t#S256":"`+clientcert.Thumbprint(tc.cert.Cert)+`"}}`) {
			t.Fatalf("%s: introspection %s", name, in.Body)
		}
	}

	other := clientcerttest.NewCA("Other CA").Issue(clientcerttest.Names{CommonName: "ward", DNSNames: []string{"ward.example"}})
	for name, tc := range map[string]struct {
		id   string
		cert *clientcerttest.Cert
	}{
		"another CA's certificate":          {pki, other},
		"the CA's certificate of a name":    {pki, ca.Issue(clientcerttest.Names{CommonName: "ward", DNSNames: []string{"lab.example"}})},
		"a self-signed one of the name":     {pki, clientcerttest.SelfSigned(clientcerttest.Names{DNSNames: []string{"ward.example"}})},
		"another key":                       {ss, clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "lab"})},
		"the CA certificate for the keyed":  {ss, good},
		"no certificate (tls_client_auth)":  {pki, nil},
		"no certificate (self-signed keys)": {ss, nil},
	} {
		r := do(t, e.mtlsClient(tc.cert), e.url+PathToken, form("grant_type", "client_credentials", "client_id", tc.id))
		wantStatus(t, r, http.StatusUnauthorized)
		if string(r.Body) != invalidClientBody {
			t.Errorf("%s: %s", name, r.Body)
		}
	}
}

// TestMTLSBindsSecretClients: a secret client's token obtained over a
// connection presenting a certificate is bound to it (RFC 8705 section 3:
// binding does not depend on how the client authenticated); without one
// it is a bearer token as before. With a DPoP proof too, the token carries
// both members (mtls.go says why).
func TestMTLSBindsSecretClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMTLS(clientcerttest.NewCA("CA").Pool()))
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	cert := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "anything"})
	r := do(t, e.mtlsClient(cert), e.url+PathToken, form("grant_type", "client_credentials"), basic(id, secret))
	_, claims := tokenParts(t, tokenReply(t, r, clients.ScopeEventsSubscribe))
	if cnf, _ := claims["cnf"].(map[string]any); cnf["x5t#S256"] != clientcert.Thumbprint(cert.Cert) || len(cnf) != 1 {
		t.Fatalf("cnf = %v", claims["cnf"])
	}
	r = do(t, e.mtlsClient(nil), e.url+PathToken, form("grant_type", "client_credentials"), basic(id, secret))
	if _, claims := tokenParts(t, tokenReply(t, r, clients.ScopeEventsSubscribe)); claims["cnf"] != nil {
		t.Fatalf("a token without a certificate: cnf = %v", claims["cnf"])
	}
	key := newProofKey(t)
	r = do(t, e.mtlsClient(cert), e.url+PathToken, form("grant_type", "client_credentials"), basic(id, secret),
		header("DPoP", key.proof(t, e.now.Now())))
	wantStatus(t, r, http.StatusOK)
	_, claims = tokenParts(t, mustToken(t, r))
	if cnf, _ := claims["cnf"].(map[string]any); cnf["x5t#S256"] != clientcert.Thumbprint(cert.Cert) || cnf["jkt"] != key.jkt || len(cnf) != 2 {
		t.Fatalf("DPoP and mTLS: cnf = %v", claims["cnf"])
	}
}

// TestMTLSThroughTrustedProxy: behind the edge the certificate comes in
// the Client-Cert field (RFC 9440), believed from a trusted proxy only;
// from anyone else it is ignored.
func TestMTLSThroughTrustedProxy(t *testing.T) {
	t.Parallel()
	ca := clientcerttest.NewCA("Partner CA")
	cert := ca.Issue(clientcerttest.Names{CommonName: "ward", DNSNames: []string{"ward.example"}})
	spec := clients.ClientSpec{AuthMethod: clients.AuthTLSClient, TLSSubject: &clients.TLSSubject{Kind: clients.SubjectSANDNS, Value: "ward.example"}}
	body := func(id string) string { return form("grant_type", "client_credentials", "client_id", id) }

	trusted := newEnv(t, withTrust("127.0.0.1/32,::1/128"), func(e *env) { e.clientCAs = nil })
	trusted.srv.cfg.ClientCAs = ca.Pool() // (the instance is plain http: the edge ends TLS)
	id := trusted.mtlsClientOf(spec)
	r := post(t, trusted.url+PathToken, formType, body(id), header(clientcert.Header, clientcert.FieldValue(cert.Cert)))
	_, claims := tokenParts(t, tokenReply(t, r, clients.ScopePatientsRead))
	if cnf, _ := claims["cnf"].(map[string]any); cnf["x5t#S256"] != clientcert.Thumbprint(cert.Cert) {
		t.Fatalf("cnf = %v", claims["cnf"])
	}
	for name, v := range map[string]string{"none": "::", "malformed": ":AAAA:", "not a byte sequence": "MIIB"} {
		r := post(t, trusted.url+PathToken, formType, body(id), header(clientcert.Header, v))
		if r.Status != http.StatusUnauthorized || string(r.Body) != invalidClientBody {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}

	untrusted := newEnv(t)
	untrusted.srv.cfg.ClientCAs = ca.Pool()
	uid := untrusted.mtlsClientOf(spec)
	r = post(t, untrusted.url+PathToken, formType, body(uid), header(clientcert.Header, clientcert.FieldValue(cert.Cert)))
	if r.Status != http.StatusUnauthorized || string(r.Body) != invalidClientBody {
		t.Fatalf("a Client-Cert field from an untrusted peer: %d %s", r.Status, r.Body)
	}
}

// TestMTLSMetadata: with mutual TLS on, the metadata names the methods
// and certificate-bound tokens (RFC 8705 sections 2.1.1, 2.2.1, 3.3) and,
// with an mTLS host of its own, the endpoint aliases (section 5).
func TestMTLSMetadata(t *testing.T) {
	t.Parallel()
	data, err := buildMetadata(Config{Issuer: testIssuer, MTLS: true, MTLSBaseURL: "https://mtls.auth.example.test"})
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, data)
	methods := []any{"client_secret_basic", "client_secret_post", "private_key_jwt", "tls_client_auth", "self_signed_tls_client_auth"}
	for _, k := range []string{"token_endpoint_auth_methods_supported", "introspection_endpoint_auth_methods_supported", "revocation_endpoint_auth_methods_supported"} {
		if got, _ := m[k].([]any); len(got) != len(methods) || got[3] != methods[3] || got[4] != methods[4] {
			t.Errorf("%s = %v", k, m[k])
		}
	}
	if m["tls_client_certificate_bound_access_tokens"] != true {
		t.Errorf("tls_client_certificate_bound_access_tokens = %v", m["tls_client_certificate_bound_access_tokens"])
	}
	aliases, _ := m["mtls_endpoint_aliases"].(map[string]any)
	if aliases["token_endpoint"] != "https://mtls.auth.example.test"+PathToken || aliases["introspection_endpoint"] != "https://mtls.auth.example.test"+PathIntrospect ||
		aliases["revocation_endpoint"] != "https://mtls.auth.example.test"+PathRevoke {
		t.Errorf("mtls_endpoint_aliases = %v", m["mtls_endpoint_aliases"])
	}
	off, _ := buildMetadata(Config{Issuer: testIssuer})
	if strings.Contains(string(off), "tls") {
		t.Errorf("metadata without mTLS names it: %s", off)
	}
}

// jsonNum is a decoded JSON integer as written.
func jsonNum(v any) string {
	f, _ := v.(float64)
	return strconv.FormatInt(int64(f), 10)
}

// TestMTLSAliasProof: with an mTLS host of its own (mtls_endpoint_aliases),
// a DPoP proof may name either token endpoint URL in its htu (RFC 8705
// section 5, RFC 9449 section 4.3), both configuration; any other is
// refused.
func TestMTLSAliasProof(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMTLS(clientcerttest.NewCA("CA").Pool()))
	e.srv.mtlsTokenURL = "https://mtls.auth.example.test" + PathToken // as Config.MTLSBaseURL sets it
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	key := newProofKey(t)
	cert := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "x"})
	for htu, want := range map[string]int{e.srv.mtlsTokenURL: http.StatusOK, testIssuer + PathToken: http.StatusOK, "https://elsewhere.example" + PathToken: http.StatusBadRequest} {
		claims := proofClaims(htu, e.now.Now())
		claims["htu"], claims["jti"] = htu, htu
		r := do(t, e.mtlsClient(cert), e.url+PathToken, form("grant_type", "client_credentials"), basic(id, secret), header("DPoP", key.sign(t, "", claims)))
		if r.Status != want {
			t.Errorf("htu %s: %d %s, want %d", htu, r.Status, r.Body, want)
		}
	}
}
