package serveconfig

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
)

// TestTLSProblems: --tls-cert and --tls-key go together and must load,
// --client-ca must hold a PEM certificate; every problem is named at once.
// A good pair gives a server configuration that asks for, and neither
// requires nor verifies, client certificates (RFC 8705 section 2.2: a
// self-signed one must reach the token endpoint).
func TestTLSProblems(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := clientcerttest.NewCA("CA")
	srv := ca.IssueServer()
	cert, key, caFile := write("c.pem", srv.CertPEM()), write("k.pem", srv.KeyPEM()), write("ca.pem", ca.CertPEM())
	junk := write("junk.pem", []byte("not PEM"))
	for _, tc := range []struct {
		name string
		tls  TLS
		want []string
	}{
		{"none", TLS{}, nil},
		{"good", TLS{CertFile: cert, KeyFile: key, ClientCA: caFile}, nil},
		{"cert alone, bad CA", TLS{CertFile: cert, ClientCA: junk}, []string{"give both or neither", "no PEM certificate in it"}},
		{"wrong key", TLS{CertFile: cert, KeyFile: caFile}, []string{"not a PEM certificate chain and its private key"}},
		{"missing CA", TLS{ClientCA: filepath.Join(dir, "nope.pem")}, []string{"cannot be read"}},
	} {
		errs := tc.tls.problems()
		if len(errs) != len(tc.want) {
			t.Errorf("%s: %v, want %d problems", tc.name, errs, len(tc.want))
			continue
		}
		for i, w := range tc.want {
			if !strings.Contains(errs[i].Error(), w) {
				t.Errorf("%s: %v lacks %q", tc.name, errs[i], w)
			}
		}
	}
	cfg, err := TLS{CertFile: cert, KeyFile: key}.ServerConfig()
	if err != nil || cfg.ClientAuth != tls.RequestClientCert || cfg.MinVersion != tls.VersionTLS12 {
		t.Fatalf("ServerConfig = %+v, %v", cfg, err)
	}
	if cfg, err := (TLS{}).ServerConfig(); cfg != nil || err != nil {
		t.Fatalf("no TLS: %v, %v", cfg, err)
	}
}
