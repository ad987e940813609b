package clients_test

import (
	"crypto/x509"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// TestTLSSubjectMatches: a registered subject DN or SAN matches the
// certificate that carries it (RFC 8705 section 2.1.2) and nothing else.
func TestTLSSubjectMatches(t *testing.T) {
	ca := clientcerttest.NewCA("Test CA")
	cert := ca.Issue(clientcerttest.Names{CommonName: "ward.example", Organization: "St Elsewhere, Ltd",
		DNSNames: []string{"ward.example"}, URIs: []string{"spiffe://hospital/ward"}, IPs: []string{"192.0.2.7"},
		Emails: []string{"ops@ward.example"}}).Cert
	for _, tc := range []struct {
		s    clients.TLSSubject
		want bool
	}{
		{clients.TLSSubject{Kind: clients.SubjectDN, Value: `CN=ward.example,O=St Elsewhere\, Ltd`}, true},
		{clients.TLSSubject{Kind: clients.SubjectDN, Value: `cn=WARD.example, o=st  elsewhere\2C ltd`}, true},
		{clients.TLSSubject{Kind: clients.SubjectDN, Value: `2.5.4.3=ward.example,2.5.4.10=St Elsewhere\, Ltd`}, true},
		{clients.TLSSubject{Kind: clients.SubjectDN, Value: `O=St Elsewhere\, Ltd,CN=ward.example`}, false},
		{clients.TLSSubject{Kind: clients.SubjectDN, Value: `CN=ward.example`}, false},
		{clients.TLSSubject{Kind: clients.SubjectSANDNS, Value: "WARD.example"}, true},
		{clients.TLSSubject{Kind: clients.SubjectSANDNS, Value: "other.example"}, false},
		{clients.TLSSubject{Kind: clients.SubjectSANURI, Value: "spiffe://hospital/ward"}, true},
		{clients.TLSSubject{Kind: clients.SubjectSANURI, Value: "spiffe://hospital/lab"}, false},
		{clients.TLSSubject{Kind: clients.SubjectSANIP, Value: "192.0.2.7"}, true},
		{clients.TLSSubject{Kind: clients.SubjectSANIP, Value: "192.0.2.8"}, false},
		{clients.TLSSubject{Kind: clients.SubjectSANEmail, Value: "OPS@ward.example"}, true},
	} {
		if got := tc.s.Matches(cert); got != tc.want {
			t.Errorf("%s %q: Matches = %v, want %v", tc.s.Kind, tc.s.Value, got, tc.want)
		}
	}
	x := func(cs ...*clientcerttest.Cert) []*x509.Certificate {
		var out []*x509.Certificate
		for _, c := range cs {
			out = append(out, c.Cert)
		}
		return out
	}
	leaf := &clientcerttest.Cert{Cert: cert}
	if err := clients.VerifyChain(x(leaf), ca.Pool(), time.Now()); err != nil {
		t.Fatalf("a certificate of the client CA: %v", err)
	}
	other := clientcerttest.NewCA("Other CA")
	self := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "ward.example"})
	for name, chain := range map[string][]*x509.Certificate{"another CA's": x(other.Issue(clientcerttest.Names{CommonName: "ward.example"})),
		"a self-signed": x(self), "none": nil} {
		if err := clients.VerifyChain(chain, ca.Pool(), time.Now()); err == nil {
			t.Errorf("%s certificate verified", name)
		}
	}
	if err := clients.VerifyChain(x(leaf), ca.Pool(), time.Now().Add(clientcerttest.Validity+time.Hour)); err == nil {
		t.Error("an expired certificate verified")
	}
}

// TestKeyRegistered: a self-signed certificate authenticates by its key
// being in the registered set (RFC 8705 section 2.2), whatever its kid.
func TestKeyRegistered(t *testing.T) {
	self := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "lab"})
	set, err := clients.CheckKeySet(self.JWKS(t, "tls-1"))
	if err != nil {
		t.Fatal(err)
	}
	if !clients.KeyRegistered(self.Cert, set) {
		t.Fatal("the registered key did not match")
	}
	other := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "lab"})
	if clients.KeyRegistered(other.Cert, set) || clients.KeyRegistered(self.Cert, nil) {
		t.Fatal("another key matched")
	}
}

// TestTLSClientSpecProblems: every problem of a mutual-TLS registration is
// listed at once.
func TestTLSClientSpecProblems(t *testing.T) {
	base := clients.ClientSpec{OrgSlug: "acme", Name: "n", Audience: clients.AudienceHospital, Scopes: []string{}}
	for name, tc := range map[string]struct {
		spec clients.ClientSpec
		want []string
	}{
		"tls without subject, with keys, bad name": {
			spec: func() clients.ClientSpec {
				s := base
				s.Name, s.AuthMethod, s.Keys = "", clients.AuthTLSClient, &clients.ClientKeySource{URL: "https://k.example/jwks"}
				return s
			}(),
			want: []string{"name: 1-200 characters required", "keys (jwks, jwks_uri): only for private_key_jwt and self_signed_tls_client_auth, not tls_client_auth",
				"a tls_client_auth client needs exactly one of tls_client_auth_subject_dn, tls_client_auth_san_dns, tls_client_auth_san_uri, tls_client_auth_san_ip, tls_client_auth_san_email (RFC 8705 section 2.1.2)"},
		},
		"bad DN": {
			spec: func() clients.ClientSpec {
				s := base
				s.AuthMethod, s.TLSSubject = clients.AuthTLSClient, &clients.TLSSubject{Kind: clients.SubjectDN, Value: "CN"}
				return s
			}(),
			want: []string{`tls_client_auth_subject_dn "CN": not an RFC 4514 distinguished name (an attribute without "="), e.g. "CN=client.example.com,O=Example Hospital,C=NL"`},
		},
		"self-signed without keys, with a subject": {
			spec: func() clients.ClientSpec {
				s := base
				s.AuthMethod, s.TLSSubject = clients.AuthSelfSignedTLSClient, &clients.TLSSubject{Kind: clients.SubjectSANIP, Value: "x"}
				return s
			}(),
			want: []string{"keys: a self_signed_tls_client_auth client needs a JWK set or a jwks_uri",
				"tls_client_auth_san_ip: only for tls_client_auth, not self_signed_tls_client_auth"},
		},
		"bad SANs": {
			spec: func() clients.ClientSpec {
				s := base
				s.AuthMethod, s.TLSSubject = clients.AuthTLSClient, &clients.TLSSubject{Kind: clients.SubjectSANDNS, Value: "*.example"}
				return s
			}(),
			want: []string{`tls_client_auth_san_dns "*.example": not a DNS name (letters, digits, hyphens and dots; no wildcard)`},
		},
		"unknown method": {
			spec: clients.ClientSpec{OrgSlug: "acme", Name: "n", Audience: clients.AudienceHospital, Scopes: []string{}, AuthMethod: "tls"},
			want: []string{`auth_method "tls": must be one of client_secret, private_key_jwt, tls_client_auth, self_signed_tls_client_auth`},
		},
	} {
		err := tc.spec.Validate()
		var refusal *clients.Error
		if !errors.As(err, &refusal) || !errors.Is(err, clients.ErrInvalid) {
			t.Errorf("%s: %v, want an ErrInvalid refusal", name, err)
			continue
		}
		if got := strings.Split(refusal.Detail, "\n"); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", name, got, tc.want)
		}
	}
	ok := base
	ok.AuthMethod, ok.TLSSubject = clients.AuthTLSClient, &clients.TLSSubject{Kind: clients.SubjectDN, Value: "CN=a,O=b"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("a good tls_client_auth spec: %v", err)
	}
}

// testTLSClients: mutual-TLS clients (RFC 8705 section 2) are made with
// their subject or keys and no secret; ClientKeys reads what the token
// service checks a certificate against; a verified certificate
// authenticates, an unverified one is a failure like a wrong secret, and
// a certificate checked against an older registration is StaleKeys; no
// secret is ever given to them, only the self-signed kind has keys to
// rotate, and only tls_client_auth a certificate name to change.
func testTLSClients(t *testing.T, e *env) {
	e.org(t, "acme", clients.EnvironmentLive)
	sub := clients.TLSSubject{Kind: clients.SubjectSANDNS, Value: "ward.example"}
	pki, secret := e.client(t, clients.ClientSpec{OrgSlug: "acme", Name: "pki", Audience: clients.AudienceHospital,
		Scopes: []string{clients.ScopePatientsRead}, AuthMethod: clients.AuthTLSClient, TLSSubject: &sub})
	if secret != "" || pki.AuthMethod != clients.AuthTLSClient || len(pki.Secrets) != 0 || pki.TLSSubject == nil || *pki.TLSSubject != sub {
		t.Fatalf("created %+v with secret %q", pki, secret)
	}
	if got, err := e.store.GetClient(ctx(t), pki.ID); err != nil || got.AuthMethod != clients.AuthTLSClient || got.TLSSubject == nil || *got.TLSSubject != sub {
		t.Fatalf("GetClient = %+v, %v", got, err)
	}
	k, err := e.store.ClientKeys(ctx(t), pki.ID)
	if err != nil || k.Keyed || k.Method != clients.AuthTLSClient || k.Version != "1" || k.TLSSubject == nil || *k.TLSSubject != sub {
		t.Fatalf("ClientKeys = %+v, %v", k, err)
	}
	self := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "lab"})
	ss, _ := e.client(t, clients.ClientSpec{OrgSlug: "acme", Name: "self", Audience: clients.AudiencePharma, Scopes: []string{},
		AuthMethod: clients.AuthSelfSignedTLSClient, Keys: &clients.ClientKeySource{JWKS: self.JWKS(t, "c1")}})
	if k, err := e.store.ClientKeys(ctx(t), ss.ID); err != nil || k.Keyed || k.Method != clients.AuthSelfSignedTLSClient || k.Set == nil {
		t.Fatalf("ClientKeys of a self-signed client = %+v, %v", k, err)
	}
	try := func(id string, verified bool, version string) clients.Authentication {
		return e.attempt(t, clients.Attempt{ClientID: id, Address: testAddr, FailureLimit: 60, Token: true,
			Certificate: &clients.CertificateCheck{Thumbprint: "tp-" + id, Verified: verified, KeysVersion: version}})
	}
	if a := try(pki.ID, true, "1"); a.Outcome != clients.Authenticated || a.Generation != 1 || a.SecretID != 1 {
		t.Fatalf("a verified certificate: %+v", a)
	}
	if a := try(pki.ID, false, "1"); a.Outcome != clients.BadCredentials || !a.Known {
		t.Fatalf("an unverified certificate: %+v", a)
	}
	if a := try(pki.ID, true, "0"); a.Outcome != clients.StaleKeys {
		t.Fatalf("a certificate checked against older keys: %+v", a)
	}
	// A secret client is not authenticated by a certificate, nor a
	// certificate client by a secret or an assertion.
	plain, plainSecret := e.client(t, clients.ClientSpec{OrgSlug: "acme", Name: "plain", Audience: clients.AudiencePharma, Scopes: []string{}})
	if a := try(plain.ID, true, ""); a.Outcome != clients.BadCredentials {
		t.Fatalf("a certificate for a secret client: %+v", a)
	}
	if a := e.attempt(t, clients.Attempt{ClientID: plain.ID, Secret: plainSecret, Address: testAddr, FailureLimit: 60}); a.Outcome != clients.Authenticated {
		t.Fatalf("the secret client's secret: %+v", a)
	}
	if a := e.attempt(t, clients.Attempt{ClientID: ss.ID, Address: testAddr, FailureLimit: 60,
		Assertion: &clients.AssertionCheck{Raw: "x", Verified: true, KeysVersion: "1", JTI: "j", Expires: e.clock.Now().Add(time.Minute)}}); a.Outcome != clients.BadCredentials {
		t.Fatalf("an assertion for a self-signed client: %+v", a)
	}
	for _, id := range []string{pki.ID, ss.ID} {
		if _, _, err := e.store.RotateSecret(ctx(t), id); !errors.Is(err, clients.ErrConflict) {
			t.Fatalf("rotate-secret of a certificate client: %v", err)
		}
	}
	if _, err := e.store.RotateKeys(ctx(t), pki.ID, clients.ClientKeySource{JWKS: self.JWKS(t, "c")}); !errors.Is(err, clients.ErrConflict) {
		t.Fatalf("rotate-keys of a tls_client_auth client: %v", err)
	}
	next := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "lab"})
	if got, err := e.store.RotateKeys(ctx(t), ss.ID, clients.ClientKeySource{JWKS: next.JWKS(t, "c2")}); err != nil || got.Generation != 2 || got.KeysVersion != 2 {
		t.Fatalf("rotate-keys of a self-signed client: %+v, %v", got, err)
	}
	// A tls_client_auth client's certificate name changes in place: its
	// generation and keys version rise, so a certificate checked against
	// the old name (keys version 1) is stale and every token issued before
	// is dead; no other client takes a certificate name.
	renamed := clients.TLSSubject{Kind: clients.SubjectDN, Value: "CN=ward2.example,O=St Elsewhere,C=NL"}
	got, err := e.store.RotateTLSSubject(ctx(t), pki.ID, renamed)
	if err != nil || got.Generation != 2 || got.KeysVersion != 2 || got.TLSSubject == nil || *got.TLSSubject != renamed {
		t.Fatalf("RotateTLSSubject = %+v, %v", got, err)
	}
	if k, err := e.store.ClientKeys(ctx(t), pki.ID); err != nil || k.Version != "2" || k.TLSSubject == nil || *k.TLSSubject != renamed {
		t.Fatalf("ClientKeys after RotateTLSSubject = %+v, %v", k, err)
	}
	if a := try(pki.ID, true, "1"); a.Outcome != clients.StaleKeys {
		t.Fatalf("a certificate checked against the old name: %+v", a)
	}
	// The certificate refused above (unverified, at keys version 1) is
	// checked again against the new registration, not remembered as a
	// repeat of a refused credential.
	if a := try(pki.ID, true, "2"); a.Outcome != clients.Authenticated || a.Generation != 2 || a.Repeated {
		t.Fatalf("a certificate checked against the new name: %+v", a)
	}
	for _, id := range []string{ss.ID, plain.ID} {
		if _, err := e.store.RotateTLSSubject(ctx(t), id, renamed); !errors.Is(err, clients.ErrConflict) {
			t.Fatalf("RotateTLSSubject of a %s client: %v", id, err)
		}
	}
	if _, err := e.store.RotateTLSSubject(ctx(t), pki.ID, clients.TLSSubject{Kind: clients.SubjectSANDNS, Value: "*.example"}); !errors.Is(err, clients.ErrInvalid) {
		t.Fatalf("RotateTLSSubject to a wildcard: %v", err)
	}
	// Revoked: a verified certificate is refused.
	if _, err := e.store.Revoke(ctx(t), pki.ID); err != nil {
		t.Fatal(err)
	}
	if a := try(pki.ID, true, "2"); a.Outcome != clients.BadCredentials {
		t.Fatalf("a revoked client's certificate: %+v", a)
	}
}
