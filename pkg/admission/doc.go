// Package admission admits a request to an API called with an access token:
// the one place where the partner API (resourceserver/api) and the admin API
// (authserver/adminapi) decide whether a request's token lets it in.
//
// Admission.Admit takes the whole request and runs, in order:
//
//  1. parse: the Authorization header, once (RFC 6750 section 2.1: one
//     header, scheme "Bearer" matched case-insensitively, one b64token), and,
//     where the API says so, no access_token in the URI query (RFC 6750
//     section 2.3);
//  2. verify: signature, issuer, audience and claims against the server's
//     signing-key authority, cached per token by accesstoken.CachingVerifier,
//     and time on every request;
//  3. admit: one Redis round trip (clients.Store.AdmitAPI) reads the client's
//     standing at the token's credential generation, counts the request
//     against the client's per-minute limit and reads what the client is;
//  4. audience kind: operator clients only on the admin API, never on the
//     partner API (README: Admin API).
//
// It returns an Outcome: a Result (missing token, malformed request,
// malformed token, invalid, expired, revoked, wrong audience kind, rate
// limited, unavailable, admitted) with the claims and the admission once
// they are known, and the cause for the logs. Each API renders an Outcome in
// its own wire format (the admin API an RFC 9457 problem with a
// `Bearer realm="admin"` challenge, the partner API {"detail"} with its own
// challenge and RateLimit fields); both answer Unavailable (the key set or
// the registry cannot be read) 503 with Retry-After: 5, and serve nothing
// whose client state was not read.
//
// # Where DPoP goes
//
// A proof-of-possession check (DPoP, RFC 9449, package dpop) is one more
// step of Admit, so both APIs get it at once, each only rendering the new
// Results: parse also accepts "Authorization: DPoP <token>" (section 7.1)
// into Credentials (the scheme beside the token); after verify, a DPoP
// token's proof is checked with dpop.Verify on an Input built from the
// request Admit already has (its DPoP header values, method, the public
// base URL plus its path, the token for "ath") and bound to the claims'
// cnf.jkt (dpop.CheckBinding); the proof's replay mark (dpop.ReplayKey)
// rides in the registry's one round trip (clients.TokenRef). Its refusals
// become Results of their own (invalid_dpop_proof, use_dpop_nonce), which
// each API renders with a DPoP challenge (dpop.Challenge). Config then
// gains the public base URL and the nonce source.
package admission
