// Package clients is the registry of organisations and API clients, kept in
// Redis: who a client is, what it may ask for, the digest of its secret, its
// credential generation and its status. Both servers read it on every
// request, which is what makes a rotation or revocation take effect at once
// on every replica.
//
// # Keys
//
// Every key of one client carries the client id as hash tag ({svc_...}):
// its record (a hash), its API and token request counts (see package
// ratelimit) and its audit trail (a list, capped). Every script therefore
// touches a single slot and also runs on Redis Cluster. Organisations
// likewise keep their record and audit stream under {org:SLUG}. The
// listing indexes live under {registry} (a set of organisations, a set of
// client ids per organisation); they are written before the record, so a
// crash between the two leaves an index entry that listings skip, never a
// record that is half written.
//
// deploy/docs/redis-keys.md lists every key (rediskeys.go builds them).
//
// # Files
//
// The registry is split by capability: orgs.go (organisations),
// operators.go (operator clients), client.go (clients, their secrets,
// keys and limits), revocation.go (revoking a client or one token),
// listing.go (listings), audit.go (the trails, as audit.Record),
// authenticate.go and admit.go (the per-request checks), sandbox.go.
// Every script is a file of lua/ (scripts.go loads them): one per
// operation, the changes of an existing client after their common
// lua/change.lua, the per-request scripts after pkg/ratelimit/window.lua,
// composed by package luascript so Redis's error line numbers name the
// file and line. Each script's KEYS, ARGV, reply and codes are declared
// once, in contracts.go; go generate writes from it the script's section
// that names them and contracts_gen.go, whose structs lay out the
// arguments and decode the reply, and whose typed codes the Go side
// switches on (deploy/docs/decisions/0005-script-contracts.md).
//
// # Audit
//
// Every change is recorded with who made it (audit.Actor, from the
// change's context: audit.WithActor) in the same script as the change.
//
// The record stays in Redis's listpack encoding (every value under 64
// bytes): the secret's SHA-256 digest raw, scopes as a bit set over
// AllScopes, times as milliseconds since the epoch. With its audit list
// and index entry, a client costs under 1 KB of Redis.
//
// # Replicas
//
// Redis replicates asynchronously. With ConfirmWrites, every operator
// change waits (WAIT, on the connection to the primary that owns the key)
// until enough replicas acknowledged it, and a change they do not confirm
// is returned with ErrNotReplicated instead of being reported as done: a
// failover could otherwise undo a rotation or a revocation and bring the
// old secret back.
//
// # Credentials
//
// A client id is "svc_" followed by 24 characters of the lower-case RFC 4648
// base32 alphabet (a-z, 2-7): 120 random bits. A secret is "svc_cs_"
// followed by 43 base62 characters (0-9, A-Z, a-z): 37 random ones (220
// bits) and a 6-character CRC-32 checksum of them, so a leaked secret can
// be recognised offline (see SecretPattern and ValidSecret). Both come from
// crypto/rand. Secrets issued before the checksum were 43 base64url
// characters (LegacySecret).
// Only the SHA-256 digest of a secret is stored; a secret of 256 random bits
// needs no slow hash, and checking it costs well under a microsecond.
package clients
