// Package adminholes checks, on the real binaries, the holes of issue 59
// that the admin API, the public base URLs and the smaller refusals left:
// authserver and resourceserver built from this repository (e2etest) and
// started as processes on loopback ports 18200-18299, on the real Redis
// (REDIS_URL, or 127.0.0.1:6379) under a key prefix of the test's own,
// the operator made with the CLI as an operator would.
//
//   - TestDeepBody (point 7): a body of 30,000 nested arrays sent with an
//     admin.write token is refused by the documented depth limit (32) in
//     the admin problem shape, its cost linear in its size: the token
//     service's peak RSS grows by at most 16 MiB, and (LONG_TESTS=1) each
//     refusal takes at most 50 ms of its CPU.
//   - TestPublicBaseURL (point 8): a DPoP proof made for the URL a Host
//     header names is refused by the resource server and the admin API,
//     which check htu against their configured base URLs only; a
//     resource server without --base-url, and a token service whose admin
//     API listens on every interface without --admin-base-url, refuse to
//     start with a configuration error.
//   - TestSmallHoles (point 14): a client without scopes, a forged listing
//     cursor, jwks_uri ports 0 and 65536 and names of invisible characters
//     are refused; a jwks_uri is followed through exactly 3 redirects;
//     GET /api/v1/me without its slash says the path to call.
//
// The tests need redis-server's Redis (CI=true: a missing one fails);
// go test -short skips them.
package adminholes
