// Package api is the resource server's HTTP interface, built on Gin: the
// partner API under /api/v1/ (today GET /api/v1/me/), the public
// documentation and the probes. NewServer returns it as an http.Handler;
// routes.go lists every route.
//
// # Authentication (RFC 6750)
//
// Every /api/v1/ request but the OpenAPI document carries
// "Authorization: Bearer svc_at_...". The header is parsed once (scheme
// matched case-insensitively, exactly one b64token, at most
// accesstoken.MaxTokenLength bytes); the token's signature, issuer and
// audience are verified against the token service's published keys, and its
// expiry against the injected clock. A verified signature is cached per
// token (bounded LRU, entries dropped at the token's "exp"), so a partner
// reusing its token for an hour pays for one signature check; expiry is
// still checked on every request, and a token whose key has been withdrawn
// (Deps.Keys, the server's key authority) is refused from the notice on,
// cached or not. Parsing, verification, the Redis round trip below and the
// audience kind are package admission's, shared with the admin API.
//
// Then one Redis round trip (clients.Store.AdmitAPI) reads the client's
// state and counts the request: the client must be active at the token's
// credential generation, so a secret rotation or a revocation refuses the
// very next request on every replica. Client state is never cached. When
// Redis (or the key set) cannot be read the answer is 503 with Retry-After:
// 5: nothing is served whose client state was not read.
//
// Refusals follow RFC 6750 section 3: 401 with
// WWW-Authenticate: Bearer realm="api" (plus error="invalid_token" when a
// token was sent), 400 error="invalid_request" for two Authorization headers
// or a token in the query. No endpoint of this release needs a scope (403
// error="insufficient_scope" comes with the first that does).
//
// # Rate limits
//
// Each client may make rate_limit_per_minute requests (default 120) in any
// 60 seconds, counted in Redis across every replica (one-second buckets,
// package ratelimit, each counted until its newest request is 60 s old); a
// limit changed with "authserver clients set-rate-limit" applies from the
// next request. Past it the answer is 429 with Retry-After: 60
// (apidocs/guides/rate-limits.md, Limits), which is always true: a request sent 60 s after a 429, with
// nothing sent in between, is admitted. Every answer to an admitted or
// rate-limited request carries the rate-limit fields of the IETF httpapi
// draft "RateLimit header fields for HTTP" in their original three-field
// form:
//
//	RateLimit-Limit      the client's requests per minute
//	RateLimit-Remaining  requests left in the current 60-second window
//	RateLimit-Reset      on a 200, seconds until the oldest counted requests
//	                     leave the window and free their places; on a 429,
//	                     equal to Retry-After (60)
//
// Answers that count nothing (400, 401, 503) carry none.
//
// # Errors
//
// Every failure, including unknown paths (404), wrong methods (405 with
// Allow) and panics (500, logged with the stack), answers
// {"detail":"..."} with Content-Type application/json; charset=utf-8.
// errors.go is the one place that writes such bodies and maps errors to
// statuses; a cause is logged, never sent.
//
// # Documentation
//
// GET /api/v1/schema/?format=json, /llms.txt, /llms-full.txt and
// /docs/<page>.md serve package apidocs publicly, with
// Cache-Control: public, max-age=300 and a strong ETag (If-None-Match gives
// 304).
//
// # Logging
//
// Every request gets an id (X-Request-Id from a trusted proxy, or a random
// one), echoed in the answer and carried by every log record. Neither
// tokens, query strings nor header values are logged.
package api
