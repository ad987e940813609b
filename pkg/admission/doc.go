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
//     partner API (deploy/docs/operator-guide.md: Admin API).
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
// # DPoP (RFC 9449)
//
// Both APIs accept a DPoP-bound token (one whose claims carry cnf.jkt,
// section 6.1) with "Authorization: DPoP <token>" and a DPoP header
// holding a proof (section 7.1). parse reads the scheme, Bearer or DPoP
// matched case-insensitively (RFC 9110 section 11.1), into Credentials;
// verify runs as for a bearer token; then, when the scheme is DPoP or the
// token is bound:
//
//   - a bound token sent as Bearer is Invalid (invalid_token): without its
//     proof it is worth nothing (section 7.2);
//   - an unbound token sent as DPoP is Invalid too: the resource server
//     must check a DPoP token's binding (section 7.2), and a token without
//     cnf has none to check, so it is not admitted as a bearer token
//     under another name;
//   - the proof is checked with dpop.Verify: one DPoP header, the
//     request's method, its public URI, ath the hash of the token, iat
//     within the window, the nonce when nonces are on; then
//     dpop.CheckBinding with the token's cnf.jkt. A refusal is
//     InvalidProof (invalid_dpop_proof), or UseNonce (use_dpop_nonce);
//   - the proof's single use (section 11.1) rides in the registry's one
//     round trip: clients.TokenRef carries dpop.ReplayKey and
//     dpop.ReplayTTL, and admit.lua sets `{CLIENT_ID}:dpop:MARK` with SET
//     NX PX; a mark that existed is a replay, InvalidProof. A bearer
//     request passes no mark and pays nothing.
//
// The public URI a proof's htu must name is Config.PublicBaseURL plus the
// request's path: the resource server's BASE_URL, the admin API's
// --admin-base-url. It is required (New refuses an API without one,
// ErrNoPublicBaseURL): the URL a proof is checked against is
// configuration, never a Host or X-Forwarded-Host header, which a caller
// (or a proxy passing the caller's on) may set to anything.
//
// Server nonces (section 9) are off by default; DPOP_NONCES=true
// (--dpop-nonces, pkg/serveconfig) turns them on for both APIs and the
// token endpoint alike, with one secret in Redis shared by every replica
// (pkg/dpopnonce). While on, every DPoP outcome carries a fresh nonce in
// Outcome.Nonce, which the APIs send as DPoP-Nonce.
//
// Outcome.DPoP says which challenge a refusal carries: set when the
// scheme was DPoP or the token is bound, the APIs answer 401 with
// WWW-Authenticate: dpop.Challenge(code, description) (with algs);
// otherwise the Bearer challenge exactly as before. Every bearer answer is
// unchanged.
package admission
