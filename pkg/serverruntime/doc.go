// Package serverruntime is what every serving process opens and closes
// around its handlers, once for `authserver serve` and `resourceserver
// serve`: from the shared configuration (package serveconfig) Open
// checks every setting (one usage error for all of them, the binary's own
// problems and the OTEL_* variables included), then opens the logger
// (go-redis's lines through it), the heap floor (package heapfloor), the
// tracing (package tracing; off unless an OTLP endpoint is set), the
// Redis client with the binary's metrics hook and go-redis's
// OpenTelemetry hook, the client registry with automatic pipelining
// (REDIS_AUTOPIPELINE), and the DPoP server nonces shared through Redis
// (DPOP_NONCES) with their watcher; Listen binds the API listener
// (--max-conns), the metrics listener (--pprof) and the binary's own (the
// admin API), then warns when Redis does not answer yet; Serve serves them
// all; Close closes everything in the reverse order of opening.
//
// A binary's serve command keeps only what is its own (the token service's
// signing keys, the resource server's JWKS cache, their handlers). A
// setting every server process shares at start (its listeners, its
// Redis, what it logs, measures and traces) is opened here, never in a
// binary.
package serverruntime
