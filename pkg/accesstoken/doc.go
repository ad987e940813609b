// Package accesstoken defines the svc_at_ access token: a compact JWS
// (RFC 7515) in the JWT profile for OAuth 2.0 access tokens (RFC 9068),
// prefixed with "svc_at_" so that a token is recognisable in logs and
// secret scanners.
//
// It provides the signing key set (a JWK set file, RFC 7517), an Issuer that
// signs tokens with the set's active key, and a Verifier that checks a token's
// signature against a public key set and its registered claims against an
// injected clock. The verifier is strict about the JSON it trusts: each JOSE
// header member and each claim once and spelt exactly (encoding/json would
// take the last of two equal keys and match keys case-insensitively), at
// most MaxMembers of each, and "nbf" honoured with the same Leeway as
// "iat". Both servers verify through one CachingVerifier, which keeps
// verified signatures in a bounded cache, checks time on every use and
// drops a token whose key left the set or is withdrawn (KeySource, the
// server's signing-key authority, says which); every "not a valid token"
// error is an ErrInvalidToken, and any other error means the keys could not
// be read.
//
// A token issued on a request with a DPoP proof (RFC 9449) is bound to the
// proof's key: Grant.JKT puts "cnf": {"jkt": thumbprint} in its claims
// (section 6.1), and the verifier reads it into Claims.Confirmation
// (Claims.BoundKey), accepting exactly that one member in "cnf"; a bearer
// token has none. Comparing it with a request's proof (dpop.CheckBinding)
// is the admission's.
//
// Whether the client behind a token is still in good standing
// (credential generation, revocation) is not decided here: that state lives in
// Redis and is read by package clients.
package accesstoken
