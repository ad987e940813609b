// Package jwks keeps the token service's published keys (its JWK set,
// RFC 7517 section 5, at /.well-known/jwks.json) for the resource server.
//
// A Source fetches the set in the background with a jwx jwk.Cache and
// refreshes it as the answer's Cache-Control allows (bounded by
// Options.MinRefreshInterval and MaxRefreshInterval); with the withdrawn
// kids (package keywithdrawal) it is the server's key authority, what its
// verifier reads (accesstoken.KeySource). The set may be unreachable when the server starts:
// New returns anyway, KeySet answers ErrNotLoaded until the first fetch
// succeeds, and the server reports itself not ready meanwhile; a failed
// first fetch is tried again within a second, then with a backoff doubling
// up to 2 s, until a set is loaded (a resource server started with the
// token service has its keys a moment after the token service answers).
//
// A token signed by a key the set does not hold makes the verifier call
// FetchUnknownKey before it answers: the set is fetched again (one fetch at
// a time, concurrent callers sharing it, at most one start per
// Options.OnDemandInterval, each wait bounded by Options.OnDemandWait) and
// the token verified again, so the first token of a newly published key
// (a rotated signing key) is served, while tokens with made-up key ids
// cannot make the server fetch more than once per interval.
package jwks
