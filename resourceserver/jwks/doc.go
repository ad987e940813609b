// Package jwks keeps the token service's published keys (its JWK set,
// RFC 7517 section 5, at /.well-known/jwks.json) for the resource server.
//
// A Source fetches the set in the background with a jwx jwk.Cache and
// refreshes it as the answer's Cache-Control allows (bounded by
// Options.MinRefreshInterval and MaxRefreshInterval). It implements
// accesstoken.KeySource. The set may be unreachable when the server starts:
// New returns anyway, KeySet answers ErrNotLoaded until the first fetch
// succeeds, and the server reports itself not ready meanwhile.
//
// A token signed by a key the set does not hold is refused (401); the
// verifier then calls RefreshSoon, which fetches again at most once per
// Options.OnDemandInterval, so a key published since the last refresh is
// picked up quickly while tokens with made-up key ids cannot make the server
// fetch per request.
package jwks
