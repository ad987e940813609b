package api

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
)

// routes lists every route of the resource server.
func (s *server) routes() {
	e := s.engine
	// Request id, access log, panic recovery and the body limit are the
	// base layer's (httpserver.Base, around the engine).
	e.Use(s.routeLabel)
	e.NoRoute(s.notFound)
	e.NoMethod(s.methodNotAllowed)

	// Probes.
	get(e, "/healthz", s.healthz)
	get(e, "/readyz", s.readyz)

	// Documentation: public, no token.
	get(e, "/api/v1/schema/", s.openAPI)
	get(e, "/llms.txt", s.llmsTxt)
	get(e, "/llms-full.txt", s.llmsFullTxt)
	get(e, "/docs/:page", s.docsPage)

	// The API: bearer token, client state and rate limit on every request.
	s.authenticated = e.Group("/api/v1", s.authenticate)
	get(s.authenticated, "/me/", s.me)

	s.slashed = map[string]bool{}
	for _, r := range e.Routes() {
		if r.Method == http.MethodGet && strings.HasSuffix(r.Path, "/") {
			s.slashed[r.Path] = true
		}
	}
}

// get routes GET and HEAD to h: a general-purpose server answers HEAD
// wherever it answers GET (RFC 9110 section 9.1).
func get(r gin.IRoutes, path string, h ...gin.HandlerFunc) {
	r.GET(path, h...)
	r.HEAD(path, h...)
}

// notFound answers a path no route takes, 404 "not found"; a GET or HEAD
// path that lacks only its trailing slash is told the path, as the token
// service tells it of its own (tokenserver's misrouted): the shape of the
// 404 is unchanged, its detail says what to call.
func (s *server) notFound(c *gin.Context) {
	r := c.Request
	if path := r.URL.Path + "/"; (r.Method == http.MethodGet || r.Method == http.MethodHead) && s.slashed[path] {
		s.fail(c, &problem{status: http.StatusNotFound, detail: "no endpoint at this path: the path ends with a slash, GET " + path})
		return
	}
	s.fail(c, errNotFound)
}

// methodNotAllowed answers 405; Gin has set Allow (RFC 9110 section 15.5.6).
func (s *server) methodNotAllowed(c *gin.Context) { s.fail(c, errMethodNotAllowed) }
