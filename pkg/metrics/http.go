package metrics

import (
	"context"
	"net/http"
	"time"
)

// Unmatched is the route label of a request no route matched (404, or a
// request refused before routing): raw paths are never labels, so that a
// scan of random paths cannot grow the series without bound.
const Unmatched = "unmatched"

type routeKey struct{}

// route is where the router leaves the matched route pattern.
type route struct{ pattern string }

// SetRoute records the route pattern ctx's request matched ("/docs/:page",
// never "/docs/errors"). The router calls it; Middleware reads it when the
// request is answered. Without Middleware around the router it does nothing.
func SetRoute(ctx context.Context, pattern string) {
	if r, ok := ctx.Value(routeKey{}).(*route); ok {
		r.pattern = pattern
	}
}

// knownMethods are the method label's values; any other method is "OTHER".
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// Middleware counts every answer of next by route, method and status class
// (2xx, 3xx, 4xx, 5xx) and observes its duration by route. The route is the
// pattern the router gave SetRoute, else Unmatched.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rt := &route{}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			pattern := rt.pattern
			if pattern == "" {
				pattern = Unmatched
			}
			method := r.Method
			if !knownMethods[method] {
				method = "OTHER"
			}
			m.httpRequests.WithLabelValues(pattern, method, statusClass(rec.status)).Inc()
			m.httpDuration.WithLabelValues(pattern).Observe(since(start))
		}()
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)))
	})
}

// statusClasses are the status class labels by the status's first digit.
var statusClasses = [...]string{1: "1xx", 2: "2xx", 3: "3xx", 4: "4xx", 5: "5xx"}

// statusClass is "2xx" for 200-299, and so on: a constant, not a string
// built on every answer.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return statusClasses[status/100]
}

// statusRecorder remembers the status of the answer.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote && code >= 200 {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushes).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes flushes on (Gin's writer asks for an http.Flusher).
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
