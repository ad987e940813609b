// Package clientcerttest makes X.509 certificates for tests and the load
// harness: a certificate authority, client certificates it issues, and
// self-signed ones, each made fresh in memory (no key is ever written to
// the repository).
package clientcerttest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
)

// Validity is how long the certificates made here are valid from now:
// long, because tests run their clocks years ahead (the token service's
// tests at 2030).
const Validity = 20 * 365 * 24 * time.Hour

// Cert is a certificate with its private key.
type Cert struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// TLS is c as a tls.Certificate (the leaf only).
func (c *Cert) TLS() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{c.Cert.Raw}, PrivateKey: c.Key, Leaf: c.Cert}
}

// CertPEM is c's certificate in PEM.
func (c *Cert) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Cert.Raw})
}

// KeyPEM is c's private key in PKCS #8 PEM (for curl --key, Python's
// requests): write it to a test's temporary directory only.
func (c *Cert) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(c.Key)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// JWKS is a JWK set of c's public key under kid: what a
// self_signed_tls_client_auth client registers.
func (c *Cert) JWKS(t testing.TB, kid string) []byte {
	t.Helper()
	k, err := jwk.Import(c.Key.Public())
	if err != nil {
		t.Fatal(err)
	}
	_ = k.Set(jwk.KeyIDKey, kid)
	set := jwk.NewSet()
	_ = set.AddKey(k)
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Names are what a certificate says of its subject.
type Names struct {
	CommonName   string
	Organization string
	DNSNames     []string
	URIs         []string
	IPs          []string
	Emails       []string
}

func newKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err)
	}
	return n
}

func template(n Names, now time.Time) *x509.Certificate {
	tpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: n.CommonName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(Validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		DNSNames:     n.DNSNames, EmailAddresses: n.Emails,
	}
	if n.Organization != "" {
		tpl.Subject.Organization = []string{n.Organization}
	}
	for _, u := range n.URIs {
		pu, err := url.Parse(u)
		if err != nil {
			panic(err)
		}
		tpl.URIs = append(tpl.URIs, pu)
	}
	for _, ip := range n.IPs {
		tpl.IPAddresses = append(tpl.IPAddresses, net.ParseIP(ip))
	}
	return tpl
}

// NewCA makes a certificate authority named name.
func NewCA(name string) *Cert {
	key := newKey()
	now := time.Now()
	tpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(Validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	return sign(tpl, tpl, key, key)
}

// Issue makes a client certificate of names issued by ca.
func (ca *Cert) Issue(n Names) *Cert {
	key := newKey()
	return sign(template(n, time.Now()), ca.Cert, key, ca.Key)
}

// IssueServer makes a TLS server certificate for the loopback names
// (localhost, 127.0.0.1, ::1) and hosts, issued by ca.
func (ca *Cert) IssueServer(hosts ...string) *Cert {
	key := newKey()
	tpl := template(Names{CommonName: "localhost", DNSNames: append([]string{"localhost"}, hosts...), IPs: []string{"127.0.0.1", "::1"}}, time.Now())
	tpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	return sign(tpl, ca.Cert, key, ca.Key)
}

// SelfSigned makes a self-signed client certificate of names.
func SelfSigned(n Names) *Cert {
	key := newKey()
	tpl := template(n, time.Now())
	return sign(tpl, tpl, key, key)
}

// Pool is a certificate pool of ca alone.
func (ca *Cert) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

func sign(tpl, parent *x509.Certificate, key *ecdsa.PrivateKey, by crypto.Signer) *Cert {
	der, err := x509.CreateCertificate(rand.Reader, tpl, parent, key.Public(), by)
	if err != nil {
		panic(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		panic(err)
	}
	return &Cert{Cert: cert, Key: key}
}
