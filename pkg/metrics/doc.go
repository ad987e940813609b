// Package metrics provides the Prometheus metrics of both servers: one
// registry per server instance (never the global default registry, so that
// tests may run several servers in one process), HTTP request counts and
// latencies by route, Redis command errors and latencies (a go-redis hook),
// token verification cache hits and misses, the token service's issued and
// refused tokens, the resource server's refusals and JWKS fetches, and the
// build's version and commit.
//
// Names follow the Prometheus conventions: a "partnerapi_" namespace,
// "_total" on counters, "_seconds" on durations, and label values from small
// fixed sets (a route pattern, never a raw path; a reason code, never a
// client id or a secret). The metrics are served on a listener of their own
// (httpserver.Group serves Handler), off the partner-facing port, and
// deploy/docs/metrics.md lists every one.
package metrics
