package tokenserver

import "net/http"

// recorder is what the token service reports for its operators (a
// *metrics.TokenService in production).
type recorder interface {
	// TokenIssued counts an access token issued.
	TokenIssued()
	// Refused counts a refused request of endpoint ("token" or
	// "introspect") by its OAuth error code.
	Refused(endpoint, reason string)
	// TokenCache counts a lookup of introspection's verified-token cache.
	TokenCache(hit bool)
}

// noMetrics counts nothing (Deps.Metrics unset).
type noMetrics struct{}

func (noMetrics) TokenIssued()        {}
func (noMetrics) Refused(_, _ string) {}
func (noMetrics) TokenCache(bool)     {}

// endpointOf names r's endpoint for the refusal count.
func endpointOf(r *http.Request) string {
	if r.URL.Path == PathToken {
		return "token"
	}
	return "introspect"
}
