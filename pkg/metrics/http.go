package metrics

import (
	"net/http"
	"time"
)

// Unmatched is the route label of a request no route matched (404, or a
// request refused before routing): raw paths are never labels, so that a
// scan of random paths cannot grow the series without bound.
const Unmatched = "unmatched"

// knownMethods are the method label's values; any other method is "OTHER".
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// ObserveHTTP counts one answer by route, method and status class (2xx,
// 3xx, 4xx, 5xx) and observes its duration by route. route is the pattern
// the request matched ("/docs/:page", never "/docs/errors"), "" for none
// (Unmatched). The servers' base layer calls it once per answer
// (httpserver.Base, its Observer), with the route its router set.
func (m *Metrics) ObserveHTTP(route, method string, status int, d time.Duration) {
	if route == "" {
		route = Unmatched
	}
	if !knownMethods[method] {
		method = "OTHER"
	}
	m.httpRequests.WithLabelValues(route, method, statusClass(status)).Inc()
	m.httpDuration.WithLabelValues(route).Observe(d.Seconds())
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
