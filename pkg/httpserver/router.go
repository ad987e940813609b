package httpserver

import (
	"net/http"
	"slices"
	"strings"
)

// Route is one endpoint of a surface: a net/http ServeMux pattern with its
// method ("POST /api/v1/oauth/token/", "GET /admin/v1/orgs/{slug}") and its
// handler. Paths match exactly: a pattern ending in "/" is registered with
// "{$}", so it never takes the paths below it, and no path is redirected.
// A GET route answers HEAD too (ServeMux's rule).
type Route struct {
	Pattern string
	Handler http.Handler
}

// Misrouted answers, in the surface's own error format, a request that no
// route takes: status 404 (no route has its path) or 405 (a route has its
// path, not its method; allow lists the methods it takes, and the router
// has already set the Allow header, RFC 9110 section 15.5.6).
type Misrouted func(w http.ResponseWriter, r *http.Request, status int, allow []string)

// router dispatches with a ServeMux and answers what it does not take
// through the surface's Misrouted, never in ServeMux's plain text.
type router struct {
	mux       *http.ServeMux
	methods   []string // every method of a route, for Allow
	misrouted Misrouted
}

// NewRouter returns the handler of routes. Each answer is labelled for the
// metrics (SetRoute) with its route's path as written (a 405 too), or with
// none (metrics.Unmatched): never a raw path. It panics on a malformed or
// conflicting pattern, as ServeMux does: routes are fixed at build time.
func NewRouter(routes []Route, misrouted Misrouted) http.Handler {
	rt := &router{mux: http.NewServeMux(), misrouted: misrouted}
	for _, route := range routes {
		method, path, ok := strings.Cut(route.Pattern, " ")
		if !ok || method == "" || !strings.HasPrefix(path, "/") {
			panic("httpserver: route pattern " + route.Pattern + " wants METHOD /path")
		}
		pattern := route.Pattern
		if strings.HasSuffix(path, "/") {
			pattern += "{$}"
		}
		rt.mux.Handle(pattern, &routed{path: path, next: route.Handler, exact: !strings.Contains(path, "{")})
		for _, m := range []string{method, http.MethodHead} {
			if (m == method || method == http.MethodGet) && !slices.Contains(rt.methods, m) {
				rt.methods = append(rt.methods, m)
			}
		}
	}
	slices.Sort(rt.methods)
	return rt
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := rt.mux.Handler(r)
	if route, ok := h.(*routed); ok {
		if !route.exact {
			rt.mux.ServeHTTP(w, r) // it binds the path values ({id})
			return
		}
		// A route without wildcards has nothing to bind: ServeMux's
		// ServeHTTP would only look the same route up a second time. The
		// pattern is set as it sets it (the admin audit reads it).
		r.Pattern = pattern
		route.ServeHTTP(w, r)
		return
	}
	// No route for this method: the methods whose route has this path
	// make it a 405; none, a 404. ServeMux's own redirects (unclean paths,
	// a subtree's missing slash) are 404s here: every route is exact.
	var allow []string
	for _, m := range rt.methods {
		if m != r.Method {
			probe := r.Clone(r.Context())
			probe.Method = m
			if h := rt.match(probe); h != nil {
				allow = append(allow, m)
				SetRoute(r.Context(), h.path) // a route's path: bounded
			}
		}
	}
	if len(allow) == 0 {
		rt.misrouted(w, r, http.StatusNotFound, nil)
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	rt.misrouted(w, r, http.StatusMethodNotAllowed, allow)
}

// match returns the route of r's method that takes r's path as it is, or
// nil (ServeMux's redirects are not routes).
func (rt *router) match(r *http.Request) *routed {
	h, _ := rt.mux.Handler(r)
	route, _ := h.(*routed)
	return route
}

// routed is a route's handler as registered: it labels the answer.
type routed struct {
	path string
	next http.Handler
	// exact is true for a path without wildcards ("{id}").
	exact bool
}

func (rt *routed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	SetRoute(r.Context(), rt.path)
	rt.next.ServeHTTP(w, r)
}
