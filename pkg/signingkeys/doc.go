// Package signingkeys is the token service's one authority over its signing
// keys: the key set in force (a JWK set file, package accesstoken) less the
// withdrawn keys (package keywithdrawal), as one immutable state swapped
// atomically.
//
// The authserver's main builds one Authority from the key file and keeps it
// current with a keywithdrawal.Watcher (authserver/withdrawal.go: on every
// withdrawal notice it reads the key file again and calls Use). Everything
// else reads it: the token endpoint signs with Issuer, the JWKS endpoint
// publishes JWKS, the admin API lists SigningKeyID and PublishedKeyIDs, and
// the verifier of introspection, revocation and the admin API's admission
// (an accesstoken.CachingVerifier) reads KeySet and Withdrawn, so a
// withdrawn key's tokens are refused from the moment the notice arrives,
// cached verifications included.
//
// While the key set's signing key is withdrawn, Issuer is nil: the token
// endpoint answers 503 and /readyz fails until a key set with another
// signing key is loaded (deploy/docs/signing-keys.md).
package signingkeys
