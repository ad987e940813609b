package tokenserver

import (
	"net/http"
	"time"

	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// recorder is what the token service reports for its operators (a
// *metrics.TokenService in production).
type recorder interface {
	// ObserveHTTP counts every answer by route, method and status class
	// (the base layer's Observer).
	httpserver.Observer
	// TokenIssued counts an access token issued.
	TokenIssued()
	// TokenRevoked counts an access token revoked (RFC 7009).
	TokenRevoked()
	// Refused counts a refused request of endpoint ("token",
	// "introspect" or "revoke") by its OAuth error code.
	Refused(endpoint, reason string)
	// CredentialChecked counts a client authentication whose credential
	// was compared against the registry (clients.Authentication.Checked),
	// by method: "client_secret" or "private_key_jwt".
	CredentialChecked(method string)
	// JWKSURIFetched counts a fetch of a private_key_jwt client's jwks_uri
	// by result: "success", "failure" (unreachable, an error status, not a
	// valid key set) or "refused" (by the jwks_uri policy).
	JWKSURIFetched(result string)
}

// noMetrics counts nothing (Deps.Metrics unset).
type noMetrics struct{}

func (noMetrics) ObserveHTTP(string, string, int, time.Duration) {}
func (noMetrics) TokenIssued()                                   {}
func (noMetrics) TokenRevoked()                                  {}
func (noMetrics) Refused(_, _ string)                            {}
func (noMetrics) CredentialChecked(string)                       {}
func (noMetrics) JWKSURIFetched(string)                          {}

// endpointOf names r's endpoint for the refusal count.
func endpointOf(r *http.Request) string {
	switch r.URL.Path {
	case PathToken:
		return "token"
	case PathRevoke:
		return "revoke"
	}
	return "introspect"
}
