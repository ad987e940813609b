package admission_test

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// TestCertificateBinding: a certificate-bound token (cnf.x5t#S256, RFC
// 8705 section 3) is admitted only with its certificate, on the TLS
// connection or in a trusted proxy's Client-Cert field; without it, with
// another one, or with a field from an untrusted peer, it is
// WrongCertificate, before the registry is asked (nothing counted). A
// bearer token is admitted with or without a certificate.
func TestCertificateBinding(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	mine := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "mine"})
	theirs := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "theirs"})
	iss, err := accesstoken.NewIssuer(f.ks, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	bound, _, err := iss.Issue(accesstoken.Grant{ClientID: f.partner.ID, Scope: f.partner.Scopes[0], Generation: 1,
		X5T: clientcert.Thumbprint(mine.Cert), Now: f.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	bearer := f.token(t, f.ks, f.partner)
	trust, _ := clientip.ParseTrust("192.0.2.1/32")
	v := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(f.keys, issuer, audience, f.clock.Now), 0, nil)
	a, err := admission.New(admission.Config{Clients: admission.Partners, RateNow: func() time.Time { return epoch },
		PublicBaseURL: publicBase, Certificates: clientcert.Source{Trust: trust}}, v, f.store)
	if err != nil {
		t.Fatal(err)
	}
	tlsOf := func(c *clientcerttest.Cert) func(r *requestMods) {
		return func(r *requestMods) { r.tls = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.Cert}} }
	}
	field := func(c *clientcerttest.Cert, from string) func(r *requestMods) {
		return func(r *requestMods) { r.header, r.from = clientcert.FieldValue(c.Cert), from }
	}
	for _, tc := range []struct {
		name  string
		token string
		mods  []func(*requestMods)
		want  admission.Result
	}{
		{"bound, its certificate on the connection", bound, []func(*requestMods){tlsOf(mine)}, admission.Admitted},
		{"bound, its certificate from a trusted proxy", bound, []func(*requestMods){field(mine, "192.0.2.1:4000")}, admission.Admitted},
		{"bound, no certificate", bound, nil, admission.WrongCertificate},
		{"bound, another certificate", bound, []func(*requestMods){tlsOf(theirs)}, admission.WrongCertificate},
		{"bound, another certificate from a trusted proxy", bound, []func(*requestMods){field(theirs, "192.0.2.1:4000")}, admission.WrongCertificate},
		{"bound, its certificate in a field from an untrusted peer", bound, []func(*requestMods){field(mine, "198.51.100.9:4000")}, admission.WrongCertificate},
		{"bound, a trusted proxy's field overrides its connection", bound, []func(*requestMods){tlsOf(mine), field(theirs, "192.0.2.1:4000")}, admission.WrongCertificate},
		{"bearer, a certificate", bearer, []func(*requestMods){tlsOf(theirs)}, admission.Admitted},
		{"bearer, none", bearer, nil, admission.Admitted},
	} {
		m := requestMods{}
		for _, mod := range tc.mods {
			mod(&m)
		}
		r := request("", "Bearer "+tc.token)
		r.TLS, r.RemoteAddr = m.tls, "203.0.113.5:1234"
		if m.from != "" {
			r.RemoteAddr = m.from
		}
		if m.header != "" {
			r.Header.Set(clientcert.Header, m.header)
		}
		out := a.Admit(t.Context(), r)
		if out.Result != tc.want {
			t.Errorf("%s: %v (%v), want %v", tc.name, out.Result, out.Err, tc.want)
		}
		if tc.want == admission.WrongCertificate && (out.Admission != (clients.APIAdmission{}) || out.Claims == nil || out.DPoP) {
			t.Errorf("%s: %+v: want the claims, no registry answer, not DPoP", tc.name, out)
		}
	}
	// A token bound both ways needs the proof too: WrongCertificate comes
	// first and is a DPoP outcome.
	both, _, _ := iss.Issue(accesstoken.Grant{ClientID: f.partner.ID, Scope: f.partner.Scopes[0], Generation: 1,
		X5T: clientcert.Thumbprint(mine.Cert), JKT: "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I", Now: f.clock.Now()})
	r := request("", "DPoP "+both)
	if out := a.Admit(t.Context(), r); out.Result != admission.WrongCertificate || !out.DPoP {
		t.Errorf("bound both ways, no certificate: %+v", out)
	}
	r = request("", "DPoP "+both)
	r.RemoteAddr = "203.0.113.5:1234"
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{mine.Cert}}
	if out := a.Admit(t.Context(), r); out.Result != admission.InvalidProof {
		t.Errorf("bound both ways, the certificate, no proof: %v, want InvalidProof", out.Result)
	}
}

// requestMods is how a case changes the request.
type requestMods struct {
	tls          *tls.ConnectionState
	header, from string
}
