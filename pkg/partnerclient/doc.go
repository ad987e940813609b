// Package partnerclient is the Go client of the Partner Integration API: it
// gets access tokens with the OAuth 2.0 client credentials grant (RFC 6749
// section 4.4) and calls the API with them, behaving as the API's
// documentation recommends for every client:
//
//   - it caches the token and renews it RenewBefore (60 s) before it
//     expires, with one token request in flight however many goroutines ask
//     at once (golang.org/x/sync/singleflight);
//   - on a 401 from the API it drops the cached token, gets a fresh one and
//     retries the request once (only a request whose body can be replayed:
//     no body, or http.Request.GetBody set);
//   - on a 429, from the token endpoint or the API, it waits the seconds of
//     Retry-After (RFC 9110 section 10.2.3), unless that is longer than
//     MaxWait or than the request's context allows, then retries;
//   - on a 5xx or a failed connection to the token endpoint, and on a 5xx
//     from the API, it retries with exponential backoff and jitter, at most
//     MaxRetries times.
//
// [TokenSource] implements golang.org/x/oauth2's oauth2.TokenSource, so it
// plugs into any code written for that package; [Transport] is an
// http.RoundTripper that adds "Authorization: Bearer" and does the retries;
// [NewHTTPClient] wraps both in an *http.Client; [Client] adds typed calls
// of the API's endpoints.
//
// # Client authentication
//
// The client authenticates to the token endpoint with its secret, in HTTP
// Basic ([AuthBasic], client_secret_basic, the default; RFC 6749 section
// 2.3.1) or in the form ([AuthForm], client_secret_post), or with a private
// key instead of a secret: private_key_jwt (RFC 7523 section 2.2, RFC 7521
// section 4.2). Set Config.PrivateKey (any crypto.Signer: an
// *ecdsa.PrivateKey, *rsa.PrivateKey, ed25519.PrivateKey, or a key in an
// HSM or a cloud KMS), KeyID (the "kid" of the public key registered for
// the client) and optionally Algorithm (ES256, ES384, RS256, RS384, PS256,
// EdDSA or its RFC 9864 name Ed25519; by default ES256 or ES384 by curve,
// RS256 for RSA, EdDSA for Ed25519). An RSA key has 2048 to 4096 bits, the
// sizes the servers verify. [ParsePrivateJWK] reads the three from a private JWK (RFC 7517).
// Every token request then carries client_id, client_assertion_type
// (urn:ietf:params:oauth:client-assertion-type:jwt-bearer) and a fresh
// client_assertion: a JWT with iss = sub = the client id, aud =
// AssertionAudience or the token endpoint URL, iat, exp 60 s later and a
// random jti, never reused, not even by a retry.
//
//	jwk, err := partnerclient.ParsePrivateJWK(data) // {"kty":"EC","crv":"P-256","kid":...,"d":...}
//	cfg := partnerclient.Config{BaseURL: "https://api.example.com", ClientID: "svc_...",
//		PrivateKey: jwk.Key, KeyID: jwk.KeyID, Algorithm: jwk.Algorithm}
//
// # DPoP: sender-constrained tokens
//
// Set Config.DPoPKey (any crypto.Signer: ECDSA P-256 or P-384, Ed25519 or
// RSA; a key of its own) and optionally DPoPAlgorithm, and the tokens are
// bound to that key (RFC 9449): every token request carries a DPoP proof,
// the server answers token_type DPoP with the key's thumbprint as the
// token's cnf.jkt ([TokenSource.DPoPThumbprint]), and [Transport] sends each
// request with "Authorization: DPoP <token>" and a new proof (htm, htu
// without query and fragment, iat, a random jti, ath: the token's hash). A
// server that wants nonces answers use_dpop_nonce with a DPoP-Nonce header
// (400 from the token endpoint, 401 from the API): the client retries once
// with it and puts the latest nonce of each server in its later proofs. A
// DPoP-bound token is useless without its key, so the plain oauth2.Token
// of [TokenSource.Token] cannot be sent by golang.org/x/oauth2's own
// transport: use Transport, NewHTTPClient or Client.
//
//	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
//	cfg.DPoPKey = key
//
// # Revocation
//
// [TokenSource.Revoke] revokes a token (RFC 7009) at BaseURL +
// /api/v1/oauth/revoke/ (Config.RevocationURL), with the client
// authentication of token requests; [TokenSource.RevokeCached] revokes the
// cached token and drops it, as a client does when it shuts down or fears
// its token leaked. Errors are *TokenError; 429 and 5xx are retried as for
// token requests.
//
// # Errors
//
// Errors are typed and work with errors.As: a [*TokenError] carries the
// token or revocation endpoint's OAuth "error" and "error_description"
// (RFC 6749 section 5.2, RFC 7009 section 2.2.1), an [*APIError] the API's
// "detail"; both carry the HTTP status and Retry-After. Neither, nor any
// String or log value of this package, contains the client secret, the
// private key, a client assertion or an access token.
//
// # Module
//
// The package is a Go module of its own,
// github.com/partnerapi/authplatform/pkg/partnerclient, declaring go 1.22
// and requiring only golang.org/x/oauth2 and golang.org/x/sync: it signs
// the client assertions with the standard library, without a JOSE library.
//
// Until it is published on a module proxy, a partner takes this directory
// and points its go.mod at it (the quickstart guide says how):
//
//	go mod edit -require=github.com/partnerapi/authplatform/pkg/partnerclient@v0.0.0 \
//	    -replace=github.com/partnerapi/authplatform/pkg/partnerclient=./third_party/partnerclient
//
// It imports nothing of the servers; it is what a partner imports. Its
// behaviour against the real servers is tested in deploy/e2e/sdk, which also
// runs this module's own tests (TestSDKModule).
package partnerclient
