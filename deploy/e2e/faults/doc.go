// Package faults holds the tests of the whole service under hostile input
// and abuse; it has no code of its own. Both servers run in-process, on the
// test Redis under a key prefix of their own, behind one net/http server
// configured as production's (pkg/httpserver: 32 KiB header cap, timeouts)
// and routed as the edge routes (the token service's paths to it,
// everything else to the resource server, as deploy/local does):
//
//   - hostile_test.go: a table of several hundred hostile requests (bodies
//     over the cap, huge headers, invalid UTF-8, NUL bytes, repeated
//     parameters, wrong content types, scope strings with tabs, newlines,
//     look-alikes and thousands of entries, broken Basic credentials, and
//     crafted tokens: alg none, HS256 keyed with the public key, unknown or
//     missing kid, tampered payloads, foreign issuers, prefix games, far
//     future expiry under an unknown key), each with its exact status, body
//     and headers, sent both over the wire and straight to the handler.
//   - timing_test.go: invalid_client for an unknown client, a wrong secret
//     and a revoked client takes one code path (one digest comparison, the
//     same Redis commands), and the benchmarks that compare their times.
//   - secrets_test.go: a whole journey with both servers' logs captured and
//     every Redis key scanned: no secret and no full access token anywhere,
//     only digests.
//   - admission_test.go: every outcome of the one bearer admission (package
//     admission) on the admin API and on the partner API side by side: the
//     same status, challenge error code and Retry-After for the same
//     failure, each in its own body format (RFC 9457 problem, {"detail"}),
//     outages (registry or key set) 503 with Retry-After: 5 on both.
//   - abuse_test.go: floods of failed authentications from one address are
//     cut off at the documented per-address limit, random client ids leave
//     nothing in Redis but expiring counters, and oversized requests are
//     refused before they are read.
//
// The tests need Redis (REDIS_URL or 127.0.0.1:6379); under CI=true a
// missing Redis fails them. No assertion depends on elapsed time: every
// window is driven by an injected clock.
package faults
