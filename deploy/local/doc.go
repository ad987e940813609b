// Command local runs the whole Partner Integration API on one port, for a
// partner's developer trying it on a laptop: the token service and the
// resource server (the same handlers the real binaries serve), routed as the
// edge proxy routes them, on an in-process Redis (miniredis) unless REDIS_URL
// names a real one, with freshly generated signing keys and the sandbox
// organisation seeded.
//
//	go run ./deploy/local [--addr 127.0.0.1:8000] [--admin-addr 127.0.0.1:8090] [--keys FILE] [--dpop-nonces]
//
// (-h lists every flag; deploy/docs/configuration.md documents them.) The
// admin API stays on loopback unless --admin-addr says otherwise, and the
// DPoP proofs' htu is checked against the listeners' own addresses.
//
// (--addr 127.0.0.1:8001, or 127.0.0.1:0 for any free port, when 8000 is
// taken.) It prints the base URL, the sandbox clients' credentials, shell
// lines that work when pasted as printed (the token into $TOKEN with curl
// and sed, then GET /api/v1/me/), and the REDIS_URL (and REDIS_KEY_PREFIX)
// under which `go run ./authserver clients ...` manages the same registry
// while it runs, the in-process one included. Restarted against a registry
// that holds the sandbox already, it cannot print the clients' secrets (only
// hashes are stored): it says so, and its lines get a new secret with
// `authserver clients rotate-secret`. Ctrl-C stops it cleanly.
package main
