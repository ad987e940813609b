package accesstoken

import (
	"context"
	"errors"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/partnerapi/authplatform/pkg/tracing"
)

// DefaultCacheSize is the number of verified tokens a CachingVerifier keeps
// by default: about 7 MB at most.
const DefaultCacheSize = 10_000

// CachingVerifier verifies tokens like Verifier and remembers verified
// signatures, so a partner that reuses its token for an hour pays one
// signature check, not one per request. Only tokens whose signature, issuer
// and audience checked out are kept, in a bounded LRU cache; time is checked
// on every use with the verifier's clock, so an expired token is refused at
// its "exp" and then dropped. A kept token whose key is withdrawn or no
// longer in the key source is verified again (and so refused): a withdrawn
// key's tokens stop the moment the key source says so, a key dropped from
// the JWKS at the next key refresh. Whether the client behind a
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

// KeyFetcher is implemented by key sources that can fetch their keys again
// when a token names a key they do not hold (the resource server's JWKS
// source). FetchUnknownKey returns once a fetch that started after the call
// has ended, nil if it succeeded; the source bounds the wait and limits
// the rate of its fetches, so tokens with made-up key ids cannot make it
// fetch per request. A withdrawn key is never fetched for.
type KeyFetcher interface {
	FetchUnknownKey(ctx context.Context, kid string) error
}

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

// Verify is VerifyContext without a deadline of the caller's own (the key
// source still bounds a fetch for an unknown key).
func (cv *CachingVerifier) Verify(token string) (*Claims, error) {
	return cv.VerifyContext(context.Background(), token)
}

// VerifyContext returns the claims of a valid token; the claims are shared
// with the cache and must not be modified. A token signed by a key the key
// source does not hold, when the source is a KeyFetcher, waits for the
// source to fetch its keys (ctx bounds the wait) and is verified again:
// it is refused only if its key is still unknown then, so the first token
// of a newly published signing key is never refused (RFC 7517 section 5
// key sets; RFC 7515 section 4.1.4, "kid", as the hint to look again). A
// failed fetch is a failure to read the key set, not an invalid token.
func (cv *CachingVerifier) VerifyContext(ctx context.Context, token string) (*Claims, error) {
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
		if _, published := set.LookupKeyID(e.kid); published && !cv.v.keys.Withdrawn(e.kid) {
			return e.claims, nil
		}
		cv.cache.Remove(token) // the key was withdrawn or dropped: verify from scratch
	}
	// The signature check's span (a traced request only): no attribute, so
	// that nothing of the token reaches the trace.
	ctx, span := tracing.Start(ctx, tracing.SpanVerify)
	defer span.End()
	claims, kid, err := cv.v.verifySignature(token)
	if f, ok := cv.v.keys.(KeyFetcher); ok && errors.Is(err, ErrUnknownKey) {
		// A key published since the last fetch (or a made-up kid): fetch
		// before answering.
		if ferr := f.FetchUnknownKey(ctx, kid); ferr != nil {
			return nil, fmt.Errorf("key set: %w", ferr)
		}
		claims, kid, err = cv.v.verifySignature(token)
	}
	if err != nil {
		return nil, err
	}
	if err := cv.v.CheckTime(claims); err != nil {
		return nil, err
	}
	cv.cache.Add(token, cachedToken{claims: claims, kid: kid})
	return claims, nil
}
