// Package httpserver is the one HTTP layer of every net/http surface of both
// binaries (token service, admin API, resource server, metrics).
//
// NewRouter routes a surface's list of Routes (ServeMux patterns such as
// "POST /api/v1/oauth/token/", matched exactly) and answers 404, and 405
// with Allow, through the surface's own error writer (Misrouted), never in
// ServeMux's plain text; it labels metrics with the route's pattern.
// JSONFormat is the one writer of every surface's JSON answers (one buffer
// pool; the one place that sets their Content-Type, Content-Length and
// fixed fields), each surface with its own format: the token service's
// OAuth errors and answers, the admin API's problems and results, the
// resource server's answers and WriteDetail, the one writer of {"detail"}
// bodies, on it. Base is the layer
// every surface puts in front of its routes (plain net/http middleware;
// the resource server mounts its Gin engine inside it): request id, body
// limit, panic recovery, the HTTP metrics of every answer (its Observer,
// with the route SetRoute left) and one access record per request, with
// attributes handlers add through Annotate.
//
// Serve serves one listener: timeouts that bound slow clients, a header
// size cap, a limit on the connections served at once (MaxConns, sized by
// default from the open file limit, with keep-alive switched off near it so
// idle connections never hold the slots), the connection closed after a
// request that carried both Content-Length and Transfer-Encoding (RFC 9112
// section 6.1), and graceful shutdown when the context ends (SIGTERM).
// Group binds and serves a process's listeners (API, admin API, metrics)
// and shuts them down together, the metrics last. Healthcheck and ProbeURL
// are the health check both binaries share, which the container images use
// in place of curl.
package httpserver
