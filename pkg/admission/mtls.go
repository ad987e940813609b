package admission

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientcert"
)

// errNoCertificate: a certificate-bound token over a connection without a
// client certificate.
var errNoCertificate = errors.New("a certificate-bound token without a client certificate")

// errOtherCertificate: a certificate-bound token over a connection with
// another client certificate than the one it is bound to.
var errOtherCertificate = errors.New("a certificate-bound token with another client certificate")

// checkCertificate checks the binding of a certificate-bound token (RFC
// 8705 section 3.1): the request's client certificate (the connection's,
// or a trusted proxy's Client-Cert field: clientcert.Source) is the one
// whose SHA-256 thumbprint the token's cnf.x5t#S256 names. Nothing but
// the thumbprint is compared: the TLS handshake (here or at the edge)
// proved the caller holds the certificate's key, and the token endpoint
// decided whom the certificate authenticates. A token bound both ways
// (cnf.jkt too) is checked here and by checkProof alike.
func (a *Admission) checkCertificate(r *http.Request, claims *accesstoken.Claims) error {
	cert, _, err := a.cfg.Certificates.Of(r)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", errNoCertificate, err)
	case cert == nil:
		return errNoCertificate
	}
	if subtle.ConstantTimeCompare([]byte(clientcert.Thumbprint(cert)), []byte(claims.BoundCertificate())) != 1 {
		return errOtherCertificate
	}
	return nil
}
