package tokenserver

import (
	"context"
	"crypto/x509"
	"errors"
	"log/slog"
	"net/http"

	"github.com/partnerapi/authplatform/pkg/clientcert"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// Mutual TLS (RFC 8705). A request's client certificate is the one its
// TLS connection presented when this server ends TLS itself, or the one a
// trusted proxy passed in the Client-Cert field (package clientcert); the
// TLS handshake, here or at the edge, proved the client holds its key.
//
//   - Client authentication (section 2): a request that names its client
//     by client_id alone (no secret, no assertion) over a connection with
//     a certificate authenticates with that certificate, as the client
//     registered: tls_client_auth, a chain to the operator's client CA
//     (--client-ca) and the registered subject DN or SAN (section 2.1);
//     self_signed_tls_client_auth, the certificate's key among the
//     client's registered keys (section 2.2). The verdict goes into the
//     one authentication round trip like an assertion's: a certificate
//     that does not authenticate is an invalid_client counted like a
//     wrong secret, one that does is no guess and is not refused by a
//     spent failure budget.
//   - Certificate-bound tokens (section 3): every token issued over a
//     connection with a client certificate, whatever the client's
//     authentication method, carries cnf.x5t#S256, the certificate's
//     SHA-256 thumbprint, and both APIs admit it only over a connection
//     with that certificate (package admission). With a DPoP proof on the
//     same request, the token carries both cnf.jkt and cnf.x5t#S256 and
//     each API checks both (RFC 9449 section 6 and RFC 8705 section 3
//     define the two members independently; RFC 7800 section 3.1 lets
//     cnf hold several): whoever uses it must hold the DPoP key and the
//     certificate's key.

// readCertificate attaches r's client certificate to req and, for a
// request that names its client without a secret or an assertion, makes
// the certificate its credential. A trusted proxy's malformed Client-Cert
// field counts as no certificate (logged).
func (s *Server) readCertificate(ctx context.Context, r *http.Request, req *clientRequest) {
	cert, chain, err := s.certs.Of(r)
	if err != nil {
		httpserver.Annotate(ctx, slog.Bool("client_cert_malformed", true))
		return
	}
	req.cert, req.chain = cert, chain
	c := &req.Client
	if cert != nil && c.Present && c.Secret == "" && !c.Basic && c.Assertion == "" {
		c.Certificate = true
	}
}

// parse is parseClientRequest with the request's client certificate read.
func (s *Server) parse(r *http.Request, token bool) (*clientRequest, error) {
	req, err := parseClientRequest(r, token)
	if err != nil {
		return nil, err
	}
	s.readCertificate(r.Context(), r, req)
	return req, nil
}

// boundThumbprint is the x5t#S256 a token issued for req is bound to: its
// connection's certificate's, "" without one.
func (req *clientRequest) boundThumbprint() string {
	if req.cert == nil {
		return ""
	}
	return clientcert.Thumbprint(req.cert)
}

// checkCertificate checks the request's certificate against the client's
// registration (cached with its keys: assertionKeys) and says what
// Authenticate needs of it. When a self-signed client's jwks_uri could not
// be fetched it returns errKeysUnavailable: nothing was checked or
// counted.
func (s *Server) checkCertificate(ctx context.Context, req *clientRequest, reload bool) (*clients.CertificateCheck, error) {
	check := &clients.CertificateCheck{Thumbprint: clientcert.Thumbprint(req.cert)}
	want := keysCached
	if reload {
		want = keysReload
	}
	e, err := s.assertionKeys.get(ctx, req.Client.ID, want)
	if err != nil {
		return nil, err
	}
	ok, why := s.certificateHolds(e, req.cert, req.chain)
	if !ok && e.keys.Method == clients.AuthSelfSignedTLSClient && e.keys.URL != "" {
		// The partner may have published a new key: fetched again, at
		// most once per jwksRefetchEvery.
		if fresh, err := s.assertionKeys.get(ctx, req.Client.ID, keysRefetch); err == nil && fresh != e {
			e = fresh
			ok, why = s.certificateHolds(e, req.cert, req.chain)
		}
	}
	if errors.Is(why, errKeysUnavailable) {
		httpserver.Annotate(ctx, slog.Bool("jwks_uri_unavailable", true))
		return nil, errKeysUnavailable
	}
	check.KeysVersion, check.Verified = e.keys.Version, ok
	if !ok {
		httpserver.Annotate(ctx, slog.String("certificate_refused", why.Error()))
	}
	return check, nil
}

// certificateHolds reports whether cert authenticates the client of e
// (RFC 8705 sections 2.1 and 2.2), and if not why (for the access record
// only).
func (s *Server) certificateHolds(e *keysEntry, cert *x509.Certificate, chain []*x509.Certificate) (bool, error) {
	switch e.keys.Method {
	case clients.AuthTLSClient:
		if s.cfg.ClientCAs == nil {
			return false, errors.New("no client CA configured (--client-ca)")
		}
		if err := clients.VerifyChain(append([]*x509.Certificate{cert}, chain...), s.cfg.ClientCAs, s.cfg.Now()); err != nil {
			return false, errors.New("chain: not issued by a client CA, expired, or not for client authentication")
		}
		if e.keys.TLSSubject == nil || !e.keys.TLSSubject.Matches(cert) {
			return false, errors.New("subject: not the registered one")
		}
		return true, nil
	case clients.AuthSelfSignedTLSClient:
		if e.unavailable() {
			return false, errKeysUnavailable
		}
		if !clients.KeyRegistered(cert, e.keys.Set) {
			return false, errors.New("key: not among the registered keys")
		}
		return true, nil
	}
	return false, errors.New("the client does not authenticate with a certificate")
}
