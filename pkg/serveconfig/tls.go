package serveconfig

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/partnerapi/authplatform/pkg/cli"
)

// TLS is where a server ends TLS itself (RFC 8705 mutual TLS without an
// edge): --tls-cert and --tls-key (TLS_CERT_FILE, TLS_KEY_FILE), both or
// neither; and, for the token service only (DeclareClientCA), --client-ca
// (CLIENT_CA_FILE), the certificate authorities of tls_client_auth
// clients. Without them the server speaks plain HTTP, behind the edge that
// ends TLS and passes a client certificate in Client-Cert (package
// clientcert).
type TLS struct {
	CertFile string
	KeyFile  string
	ClientCA string
}

// declareTLS binds --tls-cert and --tls-key.
func (t *TLS) declareTLS(f *cli.EnvFlags) {
	f.String(&t.CertFile, "tls-cert", "TLS_CERT_FILE", "",
		"PEM file of the server's TLS certificate chain: end TLS here, asking for (not requiring) client certificates; empty: plain HTTP behind the edge")
	f.String(&t.KeyFile, "tls-key", "TLS_KEY_FILE", "", "PEM file of the private key of --tls-cert")
}

// DeclareClientCA binds --client-ca on f: the token service's own flag
// (the resource server compares certificates, it never checks a chain).
func (c *Config) DeclareClientCA(f *cli.EnvFlags) {
	f.String(&c.TLS.ClientCA, "client-ca", "CLIENT_CA_FILE", "",
		"PEM file of the certificate authorities whose client certificates authenticate tls_client_auth clients (RFC 8705 section 2.1)")
}

// On reports whether the server ends TLS itself.
func (t TLS) On() bool { return t.CertFile != "" }

// problems checks the files: both of cert and key or neither, loadable;
// the client CA file holding at least one certificate.
func (t TLS) problems() []error {
	var errs []error
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		errs = append(errs, errors.New("--tls-cert (TLS_CERT_FILE) and --tls-key (TLS_KEY_FILE) go together: give both or neither"))
	case t.CertFile != "":
		if _, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile); err != nil {
			errs = append(errs, fmt.Errorf("--tls-cert (TLS_CERT_FILE) %q and --tls-key (TLS_KEY_FILE) %q: not a PEM certificate chain and its private key", t.CertFile, t.KeyFile))
		}
	}
	if t.ClientCA != "" {
		if _, err := t.ClientCAs(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// ServerConfig is the TLS configuration of a server that ends TLS itself,
// nil when it does not: its certificate, TLS 1.2 or later, HTTP/1.1, and
// client certificates requested but neither required nor verified in the
// handshake (tls.RequestClientCert): a self_signed_tls_client_auth
// client's certificate chains to nothing (RFC 8705 section 2.2), a
// tls_client_auth client's chain is checked by the token endpoint against
// --client-ca, and a partner without a certificate still connects. The
// handshake itself proves the client holds the key of what it presents.
func (t TLS) ServerConfig() (*tls.Config, error) {
	if !t.On() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert (TLS_CERT_FILE): %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"http/1.1"},
		ClientAuth:   tls.RequestClientCert,
	}, nil
}

// ClientCAs is the pool of --client-ca (nil without it).
func (t TLS) ClientCAs() (*x509.CertPool, error) {
	if t.ClientCA == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(t.ClientCA)
	if err != nil {
		return nil, fmt.Errorf("--client-ca (CLIENT_CA_FILE) %q: cannot be read", t.ClientCA)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--client-ca (CLIENT_CA_FILE) %q: no PEM certificate in it", t.ClientCA)
	}
	return pool, nil
}
