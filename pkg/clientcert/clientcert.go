package clientcert

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/partnerapi/authplatform/pkg/clientip"
)

// Header is the field a trusted proxy passes the client's certificate in:
// RFC 9440 section 2.2's Client-Cert, a structured-field byte sequence
// (":" base64 of the DER ":"). The edge sets it from its TLS connection
// (deploy/Caddyfile: ":{http.request.tls.client.certificate_der_base64}:"),
// replacing whatever the client sent; "::" (no certificate) and an absent
// field alike mean none.
const Header = "Client-Cert"

// MaxHeaderBytes bounds the field read: a client certificate of a 4096-bit
// RSA key with a long chain of names fits in a few KiB.
const MaxHeaderBytes = 16 << 10

// ErrMalformed: a trusted proxy's Client-Cert field is not one DER
// certificate in an RFC 9440 byte sequence.
var ErrMalformed = errors.New("clientcert: malformed Client-Cert field")

// Source reads requests' client certificates. The zero value trusts no
// proxy: only the TLS connection's own certificate counts.
type Source struct {
	// Trust names the proxies whose Client-Cert field is believed
	// (TRUSTED_PROXIES): from any other peer the field is ignored.
	Trust clientip.Trust
}

// Of returns the client certificate of r (nil: none) with the rest of the
// chain the client sent, if any (intermediates; only from a TLS
// connection). From a trusted proxy it is the Client-Cert field's, and
// never the proxy's own connection's: a proxy that presents a certificate
// to the server does so for itself. A trusted proxy's malformed field is
// ErrMalformed (no certificate).
func (s Source) Of(r *http.Request) (*x509.Certificate, []*x509.Certificate, error) {
	if s.Trust.FromProxy(r) {
		vs := r.Header.Values(Header)
		if len(vs) == 0 {
			return nil, nil, nil
		}
		cert, err := parseField(vs)
		return cert, nil, err
	}
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, nil, nil
	}
	return r.TLS.PeerCertificates[0], r.TLS.PeerCertificates[1:], nil
}

// parseField reads an RFC 9440 Client-Cert field: one byte sequence
// (RFC 8941 section 3.3.5), ":" base64 ":", "::" being none.
func parseField(vs []string) (*x509.Certificate, error) {
	if len(vs) != 1 || len(vs[0]) > MaxHeaderBytes {
		return nil, ErrMalformed
	}
	v := strings.TrimSpace(vs[0])
	if len(v) < 2 || v[0] != ':' || v[len(v)-1] != ':' {
		return nil, ErrMalformed
	}
	if v == "::" {
		return nil, nil
	}
	der, err := base64.StdEncoding.DecodeString(v[1 : len(v)-1])
	if err != nil {
		return nil, ErrMalformed
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return cert, nil
}

// FieldValue is the Client-Cert field of cert (RFC 9440 section 2.2), as a
// proxy writes it: for tests and the load harness.
func FieldValue(cert *x509.Certificate) string {
	return ":" + base64.StdEncoding.EncodeToString(cert.Raw) + ":"
}

// Thumbprint is cert's x5t#S256 (RFC 8705 section 3.1): the base64url,
// unpadded, SHA-256 of its DER.
func Thumbprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
