// Package tokenserver serves the token service's HTTP API: the OAuth 2.0
// token endpoint for the client credentials grant (RFC 6749 section 4.4),
// token introspection (RFC 7662), the signing keys (RFC 7517) and the
// authorization server metadata (RFC 8414).
//
// The token endpoint issues through go-oauth2/oauth2/v4's manage.Manager
// (oauth2adapter.go), over go-oauth2's own interfaces implemented here: its
// client store is the client registry, its token store the verifier and
// the registry's revocation (tokenstore.go), its generator this package's;
// go-oauth2's HTTP layer is not used.
// Everything before it is this package's: the request body is parsed here
// (form or JSON object, null meaning absent and unknown members ignored,
// size-capped, at most MaxParams parameters counted before any is decoded,
// repeated parameters refused, RFC 6749 section 3.2); client credentials are read here (HTTP Basic URL-decoded per RFC
// 6749 section 2.3.1, or form fields, never both); the secret, the
// requested scope and the per-client token limit are checked in one Redis
// round trip, the scope only after the secret, so a wrong secret never
// learns what a client holds.
//
// DPoP (RFC 9449, proof.go): a token request's DPoP proof is verified with
// package dpop before that round trip (with a client assertion, once the
// assertion verified; from an address whose ceiling of failed requests is
// spent, once a first round trip found the secret right) and judged in it
// after the credential (an unauthenticated caller learns nothing of it); its jti is
// marked used there, and the token is issued bound to the proof's key
// (token_type DPoP, cnf.jkt). Introspection describes a bound token with
// token_type DPoP and its cnf (section 6.2).
//
// Who may introspect what: a client authenticates as itself and learns only
// about its own tokens. A token of any other client is answered
// {"active":false}, exactly as an invalid one (RFC 7662 section 2.2 allows
// this), so introspection cannot be used to probe other clients' tokens.
//
// The keys it signs with, publishes and verifies with are the command's
// signing-key authority (pkg/signingkeys), which the command updates when a
// key is withdrawn (pkg/keywithdrawal): the withdrawn key is no longer
// published, its tokens are inactive at introspection, and while the
// signing key itself is withdrawn the token endpoint answers 503 and
// /readyz fails.
package tokenserver
