// Command local runs the whole Partner Integration API on one port, for a
// partner's developer trying it on a laptop: the token service and the
// resource server (the same handlers the real binaries serve), routed as the
// edge proxy routes them, on an in-process Redis (miniredis) unless REDIS_URL
// names a real one, with freshly generated signing keys and the sandbox
// organisation seeded.
//
//	go run ./deploy/local [--addr 127.0.0.1:8000] [--keys FILE]
//
// It prints the base URL, the sandbox clients' credentials and copy-paste
// curl commands. Ctrl-C stops it cleanly.
package main
