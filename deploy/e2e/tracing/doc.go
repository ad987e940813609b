// Package tracing checks the platform's traces in a real trace backend:
// Jaeger v2's all-in-one (its binary built from the tool module in tool/
// by build-jaeger.sh into the user's cache; traces in memory), the edge
// (deploy/Caddyfile with EDGE_TRACING=on, exporting OTLP/gRPC, run by a
// Caddy with its tracing module, which Debian's lacks: e2etest.Caddy) and both
// servers built from this repository (exporting OTLP/HTTP), started as
// processes on loopback ports 18300-18399 (the servers' Redis is the real
// one, REDIS_URL or 127.0.0.1:6379, under a key prefix of the test's own).
//
// TestTraces sends a token request and a /me call through the edge and
// reads each trace back from Jaeger's query API (GET /api/traces/ID, the
// id from the server's access record): the edge's span at the root, the
// server's span named after its route its child, and the Redis script's
// span and the signature's (token.sign) or its check's (token.verify)
// children of the server's; nothing in the trace holds the secret, the
// token, the Authorization header or the client id. It also checks that a
// traceparent is continued from a trusted proxy only and that the edge
// drops a partner's.
//
// Without either binary the suite is skipped with the command that builds
// it; under CI=true it fails (.ci/run builds both first).
package tracing
