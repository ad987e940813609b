// Package adminapi is the token service's admin HTTP API: what the
// operator command line does (organisations, clients, secrets, limits,
// audit trails, signing keys, the sandbox), for portals and automation, on
// a listener of its own (authserver serve --admin-addr, loopback by
// default, never the partner-facing port).
//
// Callers are operator clients (authserver operators create) with our own
// svc_at_ tokens, got by the client credentials grant at the token
// endpoint, and checked as the resource server checks partners' tokens:
// signature and claims (cached per token), then one Redis script that
// finds the client active at the token's credential generation and under
// its per-minute limit, so a rotation or revocation of an operator takes
// effect on the next request. admin.read reads; admin.write also changes
// (RFC 6750 section 3.1: 403 insufficient_scope otherwise).
//
// Errors are RFC 9457 problem details (application/problem+json) written
// in one place (problem.go): a refusal in the words of its own type
// (clients.Error.Public), a known outage of Redis 503 with Retry-After,
// anything else 500 internal, its cause logged with the request id and
// never answered. Every call, answered or refused after
// authentication, is recorded in the admin audit stream with the operator
// client id, the request id and the caller's address (audit.go). Changes
// (POST, PUT, DELETE) take an Idempotency-Key
// (draft-ietf-httpapi-idempotency-key-header): a retry with the same key
// and body replays the first answer, secret included, for 24 hours
// (idempotency.go says how the secret is kept).
//
// The operations themselves are package operations', shared with the
// command line; this package parses, authorizes, audits and answers. The
// OpenAPI 3.1 document (openapi.json) is served at /admin/v1/openapi.json
// and every answer of the tests is checked against it.
package adminapi
