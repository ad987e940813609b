// Package clients runs third-party OAuth 2.0 clients, unchanged, against
// the real binaries: authserver and resourceserver built from this
// repository and started as processes on loopback ports, on the real Redis
// (REDIS_URL, or 127.0.0.1:6379) under a key prefix of the test's own. The
// operator's CLI (authserver clients create, add-secret, retire-secret,
// rotate-keys) creates and changes the clients, as an operator would.
//
// The clients:
//
//   - Node.js: oauth4webapi (node/package.json, its exact version pinned by
//     node/package-lock.json and installed with `npm ci` once into a cache
//     under os.UserCacheDir keyed by the hash of both files, which later runs
//     reuse): metadata discovery (RFC 8414), client_credentials with
//     private_key_jwt (ES256, Ed25519, and ES256 from a PKCS #8 PEM key,
//     signed without kid) and client_secret_basic, GET /api/v1/me/,
//     revocation (RFC 7009), /me refused afterwards.
//   - Python: Authlib's requests OAuth2Session (python/client.py; Debian's
//     python3-authlib and python3-requests, run with /usr/bin/python3):
//     private_key_jwt (RS256, Authlib's default, ES256, and RS256 from a
//     PKCS #8 PEM key, signed without kid) and client_secret_post,
//     fetch_token, /me, revoke_token, /me refused.
//
// Both run their libraries' private_key_jwt as it comes, with no override:
// the header and lifetime of what each signs are printed and pinned
// (Authlib exp = iat + 3600, oauth4webapi iat + 60).
//
// Each script prints one JSON object a line per step; the tests compare
// them with what the servers must answer (status, headers, bodies), check
// the same tokens on the wire themselves, and log the lines and the time
// each client took (go test -v).
//
// TestSecretRotation and TestRotateKeys drive a rotation without downtime
// with net/http and the CLI: add-secret, both secrets' tokens work,
// retire-secret kills only the old secret's tokens; rotate-keys kills every
// token of the old keys.
//
// The tests need node and npm, /usr/bin/python3 with Authlib, and Redis.
// Under CI=true a missing one is a failure; otherwise the test is skipped.
// go test -short skips them too.
package clients
