package tokenserver

import (
	"net/http"
	"strings"

	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// routes lists every endpoint of the token service (httpserver.NewRouter
// patterns; a GET route answers HEAD too).
func (s *Server) routes() []httpserver.Route {
	return []httpserver.Route{
		{Pattern: "POST " + PathToken, Handler: http.HandlerFunc(s.handleToken)},
		{Pattern: "POST " + PathIntrospect, Handler: http.HandlerFunc(s.handleIntrospect)},
		{Pattern: "POST " + PathRevoke, Handler: http.HandlerFunc(s.handleRevoke)},
		{Pattern: "GET " + PathJWKS, Handler: http.HandlerFunc(s.handleJWKS)},
		{Pattern: "GET " + PathMetadata, Handler: publicDocument(s.meta)},
		{Pattern: "GET /healthz", Handler: http.HandlerFunc(s.handleHealthz)},
		{Pattern: "GET /readyz", Handler: http.HandlerFunc(s.handleReadyz)},
	}
}

// misrouted answers a request no route takes in the OAuth error format
// (RFC 6749 section 5.2) through the one writer of that format, as every
// other error on the token service's paths: invalid_request, with a
// description naming what to send instead. A 405 carries Allow (RFC 9110
// section 15.5.6; the router sets it).
func (s *Server) misrouted(w http.ResponseWriter, r *http.Request, status int, allow []string) {
	desc := "no endpoint at this path; the token endpoint is POST " + PathToken +
		" and the server's metadata is GET " + PathMetadata
	if status == http.StatusMethodNotAllowed {
		desc = "this endpoint takes " + strings.Join(allow, " or ") + " only"
	} else if path := r.URL.Path + "/"; path == PathToken || path == PathIntrospect || path == PathRevoke {
		desc = "no endpoint at this path: the path ends with a slash, POST " + path
	}
	writeOAuthError(r.Context(), s.log, w, credentials{}, &oauthError{Status: status, Code: "invalid_request", Description: desc})
}
