package clientcert_test

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
	"github.com/partnerapi/authplatform/pkg/clientip"
)

// TestSource: the connection's certificate counts from any peer but a
// trusted proxy, whose Client-Cert field (RFC 9440) counts instead, and
// only its; a field from anyone else is ignored; a trusted proxy's
// malformed field is ErrMalformed.
func TestSource(t *testing.T) {
	conn := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "conn"})
	field := clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "field"})
	trust, _ := clientip.ParseTrust("192.0.2.1/32")
	src := clientcert.Source{Trust: trust}
	for _, tc := range []struct {
		name, from, header string
		tls                bool
		want               *clientcerttest.Cert
		err                error
	}{
		{"connection", "198.51.100.1:1", "", true, conn, nil},
		{"connection, a field from an untrusted peer", "198.51.100.1:1", clientcert.FieldValue(field.Cert), true, conn, nil},
		{"field from a trusted proxy", "192.0.2.1:1", clientcert.FieldValue(field.Cert), true, field, nil},
		{"trusted proxy, no field", "192.0.2.1:1", "", true, nil, nil},
		{"trusted proxy, none", "192.0.2.1:1", "::", false, nil, nil},
		{"trusted proxy, not base64", "192.0.2.1:1", ":%%%:", false, nil, clientcert.ErrMalformed},
		{"trusted proxy, not a certificate", "192.0.2.1:1", ":AAAA:", false, nil, clientcert.ErrMalformed},
		{"trusted proxy, no colons", "192.0.2.1:1", base64.StdEncoding.EncodeToString(field.Cert.Raw), false, nil, clientcert.ErrMalformed},
		{"trusted proxy, too long", "192.0.2.1:1", ":" + strings.Repeat("A", clientcert.MaxHeaderBytes) + ":", false, nil, clientcert.ErrMalformed},
		{"nothing", "198.51.100.1:1", "", false, nil, nil},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.from
		if tc.tls {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{conn.Cert}}
		}
		if tc.header != "" {
			r.Header.Set(clientcert.Header, tc.header)
		}
		got, _, err := src.Of(r)
		if !errors.Is(err, tc.err) || (tc.want == nil) != (got == nil) || (got != nil && !got.Equal(tc.want.Cert)) {
			t.Errorf("%s: %v, %v", tc.name, got != nil, err)
		}
	}
	sum := sha256.Sum256(conn.Cert.Raw)
	if clientcert.Thumbprint(conn.Cert) != base64.RawURLEncoding.EncodeToString(sum[:]) {
		t.Error("Thumbprint is not the base64url SHA-256 of the DER (RFC 8705 section 3.1)")
	}
}
