// Package clients is the registry of organisations and API clients, kept in
// Redis: who a client is, what it may ask for, the digest of its secret, its
// credential generation and its status. Both servers read it on every
// request, which is what makes a rotation or revocation take effect at once
// on every replica.
//
// # Keys
//
// Every key of one client carries the client id as hash tag ({svc_...}):
// its record (a hash), its API and token request logs (sorted sets, see
// package ratelimit) and its audit stream. Every script therefore touches a
// single slot and also runs on Redis Cluster. Organisations likewise keep
// their record and audit stream under {org:SLUG}. The listing indexes live
// under {registry}; they are written before the record, so a crash between
// the two leaves an index entry that listings skip, never a record that is
// half written.
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
