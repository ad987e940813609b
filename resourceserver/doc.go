// Command resourceserver answers partners' API calls: GET /api/v1/me/ with
// instant revocation and rate limits shared by every replica, and the public
// documentation (OpenAPI document, llms.txt, Markdown pages).
//
// Usage:
//
//	resourceserver serve [--addr :8081] [--metrics-addr 127.0.0.1:9081] [--jwks-url URL]
//	                     [--issuer URL] [--audience A] [--trusted-proxies CIDRS]
//	                     [--log-level LEVEL] --base-url URL
//	resourceserver healthcheck [--url http://127.0.0.1:PORT/readyz]
//	resourceserver help, resourceserver COMMAND --help
//
// The files follow the token service's: main.go (main and run), commands.go
// (the command table, package cli), config.go (serve's flags and their
// validation), serve.go (the wiring).
//
// Every flag of serve has an environment variable, used when the flag is not
// given: ADDR, METRICS_ADDR, JWKS_URL, ISSUER, AUDIENCE, TRUSTED_PROXIES, LOG_LEVEL,
// BASE_URL, and REDIS_URL (also --redis-url, but the environment keeps
// credentials out of the process list). REDIS_KEY_PREFIX prefixes every
// Redis key, as on the token service. The server shares nothing with the
// token service but Redis and the token service's published keys
// (--jwks-url). --max-conns (MAX_CONNS) limits the connections served at
// once (default: from the open file limit, see pkg/httpserver). The server
// watches the signing keys withdrawn through Redis (pkg/keywithdrawal): a
// withdrawn key's tokens are refused from the notice on, and the JWKS is
// fetched again at once.
//
// GET /api/v1/me/ also admits a DPoP-bound token with Authorization: DPoP
// and its proof (RFC 9449; package admission): the proof's htu is checked
// against BASE_URL plus the path, never the address the request names
// (its Host or forwarded headers), so BASE_URL is required; and
// DPOP_NONCES=true (--dpop-nonces) requires a server nonce shared with
// every replica and the token service through Redis (package dpopnonce).
//
// healthcheck is the probe of images without a shell or curl: it exits 0
// when the local server's /readyz answers 200 (port from HEALTHCHECK_PORT,
// else ADDR, else 8081).
//
// It starts even when Redis or the JWKS cannot be reached: /readyz reports
// what is missing and API requests answer 503 until it is back. On SIGINT or
// SIGTERM it stops accepting connections and lets requests in flight finish
// (up to 10 seconds). Logs are JSON on stderr, one record per request, each
// with its request id; the listening address is printed on stdout.
package main
