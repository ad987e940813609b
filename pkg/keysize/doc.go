// Package keysize is the one rule for the sizes of the public keys the
// services verify signatures with: a client's registered keys and the keys
// its jwks_uri serves (pkg/clients), and the key a DPoP proof carries
// (pkg/dpop). A signature check costs with its key's size, and these keys
// come from callers who have not authenticated yet (a DPoP proof is checked
// before the credential beside it; an RSA verification with a 16,384-bit
// modulus costs about fifty times one with 2,048 bits), so the sizes are
// bounded on both sides.
//
// RSA: 2048 bits at least (RFC 7518 section 3.3; RFC 9449 and RFC 7523
// defer to it), 4096 at most, the largest size in common use (what the
// major cloud KMSs offer, and what openssl genpkey is asked for at most).
// EC keys are P-256 or P-384 and Ed25519 keys 32 bytes: their sizes are
// fixed by the curve, which the callers check.
package keysize
