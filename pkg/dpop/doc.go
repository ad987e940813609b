// Package dpop verifies DPoP proofs: OAuth 2.0 Demonstrating Proof of
// Possession (RFC 9449). A client that holds a key pair sends, with a token
// request and with every request carrying a DPoP-bound access token, a
// DPoP header holding a short JWT signed with its private key (a "proof",
// section 4); a token issued on such a request is bound to the public key
// (its cnf.jkt, section 6.1), so a stolen token is useless without the
// key.
//
// The package is pure: no net/http, no Redis, no state but a NonceSource's
// secret. The servers build an Input from their parsed request and call
// Verify, which runs the checks of section 4.3 and returns the Proof (the
// key's RFC 7638 thumbprint, jti, iat) or an *Error whose Code is
// invalid_dpop_proof or use_dpop_nonce (sections 5, 7.1, 8 and 9).
//
// # What a proof must be
//
// One DPoP header value; a JWS in compact serialization of at most
// MaxProofLength bytes, its JOSE header at most MaxHeaderLength; typ
// "dpop+jwt"; alg one of Algorithms (ES256, ES384, RS256, PS256, EdDSA or
// its fully specified name Ed25519; never "none" nor a MAC); no crit or
// b64; a jwk header member holding a public key that fits the alg (EC
// P-256 for ES256, P-384 for ES384, RSA of 2048 to 4096 bits by package
// keysize, OKP Ed25519) and no private member (d, p, q, dp, dq, qi, oth,
// k); a signature that verifies
// with it; claims jti (at most MaxJTILength), htm equal to the request's
// method, htu equal to its URI without query and fragment after
// NormalizeURI (RFC 3986 sections 6.2.2 and 6.2.3), iat within
// [now-DefaultWindow, now+DefaultLeeway] (60 s back, 5 s ahead); ath, the
// base64url SHA-256 of the access token, when a token is presented
// (section 7.1); nonce when the server requires nonces. The header, the jwk
// and the claims must spell each member once and exactly, as access tokens
// must (pkg/accesstoken).
//
// After Verify, a resource server also checks that the token's cnf.jkt is
// the proof's key (CheckBinding), and answers a refusal with 401 and
// WWW-Authenticate: Challenge(code, description) (section 7.1).
//
// # Single use of a proof (replay)
//
// Section 11.1: a proof's jti is accepted once. Verify does not remember
// it; the caller records it in the Redis script of the round trip it makes
// anyway (the client's authentication at the token endpoint, the token's
// admission at a resource server), so a proof costs no extra round trip:
//
//	key:  prefix + "{" + clientID + "}:dpop:" + ReplayKey(proof)
//	call: SET key 1 NX PX ReplayTTL(window, leeway).Milliseconds()
//
// ReplayKey is a digest of the thumbprint and the jti (32 hex characters),
// so the client's jti never makes an arbitrary key; the key lives under the
// client's hash tag, so the script touches one Cluster slot. ReplayTTL is
// the window plus the leeway plus ReplayMargin: the longest a proof stays
// acceptable after its first use. A SET that finds the key is a replay:
// the caller refuses with ErrReplayed (invalid_dpop_proof).
//
// # Server nonces
//
// Sections 8 and 9: a server may require a nonce it chose in every proof,
// so that a proof made in advance is stale. NonceSource issues stateless
// nonces: the number of the current period and an HMAC-SHA256 of it under
// a secret that every replica shares (through Redis: package dpopnonce), so
// no nonce is stored and none needs a round trip. It accepts the current
// and the previous period's nonce. Setting Input.Nonces turns the check
// on: a proof without a valid nonce is refused with use_dpop_nonce, and
// the answer carries DPoP-Nonce: source.Nonce(now). Servers keep it off by
// default.
package dpop
