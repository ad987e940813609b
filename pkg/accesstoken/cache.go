package accesstoken

import (
	"errors"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"
)

// DefaultCacheSize is the number of verified tokens a CachingVerifier keeps
// by default: about 7 MB at most.
const DefaultCacheSize = 10_000

// CachingVerifier verifies tokens like Verifier and remembers verified
// signatures, so a partner that reuses its token for an hour pays one
// signature check, not one per request. Only tokens whose signature, issuer
// and audience checked out are kept, in a bounded LRU cache; time is checked
// on every use with the verifier's clock, so an expired token is refused at
// its "exp" and then dropped. A kept token whose key is no longer in the key
// source is verified again (and so refused), so a key withdrawn from the
// JWKS stops its tokens at the next key refresh. Whether the client behind a
// token is in good standing is not its business: that is read from Redis on
// every request.
//
// Errors of Verify are either ErrInvalidToken (errors.Is) or a failure to
// read the key set. It is safe for concurrent use.
type CachingVerifier struct {
	v     *Verifier
	cache *lru.Cache[string, cachedToken]
	// lookedUp counts cache hits and misses (optional).
	lookedUp func(hit bool)
}

// cachedToken is a cache entry: the claims (shared, read-only) and the kid
// of the key that verified them.
type cachedToken struct {
	claims *Claims
	kid    string
}

// refresher is implemented by key sources that can fetch their keys again,
// rate limited, when a token names a key they do not hold (the resource
// server's JWKS source).
type refresher interface{ RefreshSoon() }

// NewCachingVerifier returns a CachingVerifier over v keeping at most size
// tokens (size <= 0: DefaultCacheSize). lookedUp, if not nil, is told of
// every cache hit and miss (a metric).
func NewCachingVerifier(v *Verifier, size int, lookedUp func(hit bool)) *CachingVerifier {
	if size <= 0 {
		size = DefaultCacheSize
	}
	if lookedUp == nil {
		lookedUp = func(bool) {}
	}
	cache, err := lru.New[string, cachedToken](size)
	if err != nil {
		panic("accesstoken: " + err.Error()) // only for size <= 0, ruled out above
	}
	return &CachingVerifier{v: v, cache: cache, lookedUp: lookedUp}
}

// Verify returns the claims of a valid token; the claims are shared with
// the cache and must not be modified.
func (cv *CachingVerifier) Verify(token string) (*Claims, error) {
	e, ok := cv.cache.Get(token)
	cv.lookedUp(ok)
	if ok {
		if err := cv.v.CheckTime(e.claims); err != nil {
			cv.cache.Remove(token)
			return nil, err
		}
		set, err := cv.v.keys.KeySet()
		if err != nil {
			return nil, fmt.Errorf("key set: %w", err)
		}
		if _, published := set.LookupKeyID(e.kid); published {
			return e.claims, nil
		}
		cv.cache.Remove(token) // the key was withdrawn: verify from scratch
	}
	claims, kid, err := cv.v.verifySignature(token)
	if err != nil {
		if r, ok := cv.v.keys.(refresher); ok && (errors.Is(err, ErrUnknownKey) || !errors.Is(err, ErrInvalidToken)) {
			// A key published since the last refresh, or keys not loaded
			// yet: ask for a refresh, which the source rate-limits so that
			// tokens with made-up kids cannot make it fetch per request.
			r.RefreshSoon()
		}
		return nil, err
	}
	if err := cv.v.CheckTime(claims); err != nil {
		return nil, err
	}
	cv.cache.Add(token, cachedToken{claims: claims, kid: kid})
	return claims, nil
}
