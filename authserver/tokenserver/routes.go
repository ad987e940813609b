package tokenserver

import (
	"net/http"

	"github.com/partnerapi/authplatform/pkg/metrics"
)

// route is one endpoint.
type route struct {
	method  string
	path    string
	handler http.HandlerFunc
}

// routes lists every endpoint of the token service.
func (s *Server) routes() []route {
	return []route{
		{http.MethodPost, PathToken, s.handleToken},
		{http.MethodPost, PathIntrospect, s.handleIntrospect},
		{http.MethodPost, PathRevoke, s.handleRevoke},
		{http.MethodGet, PathJWKS, s.handleJWKS},
		{http.MethodGet, PathMetadata, publicDocument(s.meta)},
		{http.MethodGet, "/healthz", s.handleHealthz},
		{http.MethodGet, "/readyz", s.handleReadyz},
	}
}

// router dispatches on exact paths and answers unknown paths 404 and wrong
// methods 405 with Allow (RFC 9110 section 15.5.6), both as {"detail"}.
// Hand-written because http.ServeMux answers those in plain text.
type router struct {
	byPath map[string]map[string]http.HandlerFunc
	allow  map[string]string
}

func newRouter(routes []route) *router {
	rt := &router{byPath: map[string]map[string]http.HandlerFunc{}, allow: map[string]string{}}
	for _, r := range routes {
		if rt.byPath[r.path] == nil {
			rt.byPath[r.path] = map[string]http.HandlerFunc{}
		}
		rt.byPath[r.path][r.method] = r.handler
		if r.method == http.MethodGet {
			rt.byPath[r.path][http.MethodHead] = r.handler
		}
	}
	for path, methods := range rt.byPath {
		allow := ""
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
			if methods[m] != nil {
				if allow != "" {
					allow += ", "
				}
				allow += m
			}
		}
		rt.allow[path] = allow
	}
	return rt
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	methods, ok := rt.byPath[r.URL.Path]
	if !ok {
		writeDetail(w, http.StatusNotFound, nil, "not found")
		return
	}
	metrics.SetRoute(r.Context(), r.URL.Path) // a route's path: a bounded label
	h, ok := methods[r.Method]
	if !ok {
		writeDetail(w, http.StatusMethodNotAllowed, http.Header{"Allow": {rt.allow[r.URL.Path]}}, "method not allowed")
		return
	}
	h(w, r)
}
