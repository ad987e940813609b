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
// A proof-of-possession check (DPoP, RFC 9449: "Authorization: DPoP" plus a
// DPoP proof header, the token bound by its "cnf" "jkt" claim) belongs in
// Admit as one more step: the proof is parsed with the credentials (parse
// sees the whole request: method, URL and headers) and checked against the
// verified claims before the registry is asked, so both APIs get it at once
// without changing how they render outcomes.
package admission
