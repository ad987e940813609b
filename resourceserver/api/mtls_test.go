package api

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// TestCertificateBoundToken: GET /api/v1/me/ with a certificate-bound
// token (RFC 8705 section 3) answers 200 over a connection presenting its
// certificate and 401 invalid_token, in the {"detail"} shape with the
// Bearer challenge, without it or with another; both answers are the
// OpenAPI document's.
func TestCertificateBoundToken(t *testing.T) {
	f := newFixture(t)
	c := f.client("acme", clients.EnvironmentSandbox, clients.AudiencePharma, clients.ScopeEventsSubscribe)
	mine := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "mine"})
	tok, _, err := f.issuer.Issue(accesstoken.Grant{ClientID: c.ID, Scope: clients.ScopeEventsSubscribe, Generation: c.Generation,
		SecretID: c.Secrets[0].ID, X5T: clientcert.Thumbprint(mine.Cert), Now: f.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	h := f.server().handler
	get := func(cert *clientcerttest.Cert) (*http.Request, *httptest.ResponseRecorder) {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		if cert != nil {
			req.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert.Cert}}
		}
		return req, serve(h, req)
	}
	req, rec := get(mine)
	if rec.Code != http.StatusOK {
		t.Fatalf("with its certificate: %d %s", rec.Code, rec.Body)
	}
	f.validate(req, rec)
	for _, cert := range []*clientcerttest.Cert{nil, clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "x"})} {
		req, rec := get(cert)
		wantJSON(t, rec, http.StatusUnauthorized, map[string]any{"detail": "access token is bound to a client certificate: send it over a connection that presents that certificate"})
		wantHeader(t, rec, map[string]string{"WWW-Authenticate": `Bearer realm="api", error="invalid_token"`})
		f.validate(req, rec)
	}
}
