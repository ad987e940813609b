package tokenserver

import (
	"context"
	"net/http"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// signingKeys is the signing-key authority as the service reads it (a
// *signingkeys.Authority, which the command keeps current as keys are
// withdrawn).
type signingKeys interface {
	// Issuer signs new tokens; nil while the signing key is withdrawn.
	Issuer() *accesstoken.Issuer
	// JWKS is the document of the published keys, the withdrawn ones
	// left out (RFC 7517 section 5).
	JWKS() []byte
}

// tokenVerifier checks a token's signature and claims against the keys the
// authority publishes, withdrawn ones refused (an
// *accesstoken.CachingVerifier over the authority): every token error is an
// accesstoken.ErrInvalidToken, any other error a key set that could not be
// read.
type tokenVerifier interface {
	VerifyContext(ctx context.Context, token string) (*accesstoken.Claims, error)
}

// errNoSigningKey: the key set's signing key is withdrawn, so no token is
// issued until a key set with another signing key is loaded.
var errNoSigningKey = &oauthError{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable",
	Description: "The service cannot sign tokens right now; retry after the number of seconds in Retry-After"}

// handleJWKS serves the published keys (RFC 7517 section 5).
func (s *Server) handleJWKS(w http.ResponseWriter, r *http.Request) {
	publicDocument(s.keys.JWKS())(w, r)
}
