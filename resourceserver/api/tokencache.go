package api

import (
	"errors"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// verifier checks tokens (an *accesstoken.Verifier).
type verifier interface {
	// VerifySignature checks all but time; its result may be cached.
	VerifySignature(token string) (*accesstoken.Claims, error)
	// CheckTime checks "exp" and "iat" against the clock.
	CheckTime(c *accesstoken.Claims) error
}

// keyRefresher is implemented by key sources that can fetch their keys
// again, rate limited, when a token names a key they do not hold (jwks.Source).
type keyRefresher interface {
	RefreshSoon()
}

// tokenVerifier verifies tokens and caches verified signatures: a partner
// that reuses its token for an hour pays one signature check, not one per
// request. Only tokens whose signature, issuer and audience checked out are
// cached; time is checked on every use with the injected clock, so an
// expired token is refused at its "exp" and then dropped from the cache.
// A cached token whose key is no longer published is checked again, so a
// key withdrawn from the JWKS stops its tokens at the next key refresh.
// Whether the client is still in good standing is not cached at all: that is
// read from Redis on every request.
type tokenVerifier struct {
	v     verifier
	keys  accesstoken.KeySource
	cache *lru.Cache[string, verifiedToken]
	// lookedUp counts cache hits and misses.
	lookedUp func(hit bool)
}

// verifiedToken is a cache entry: the claims (shared, read-only) and the kid
// of the key that verified them.
type verifiedToken struct {
	claims *accesstoken.Claims
	kid    string
}

func newTokenVerifier(v verifier, keys accesstoken.KeySource, size int, lookedUp func(hit bool)) *tokenVerifier {
	cache, err := lru.New[string, verifiedToken](size)
	if err != nil {
		panic("api: token cache: " + err.Error()) // only for size <= 0, which newServer rules out
	}
	return &tokenVerifier{v: v, keys: keys, cache: cache, lookedUp: lookedUp}
}

// tokenErrors are the accesstoken errors that mean "not a valid token". Any
// other error of VerifySignature means the key set could not be read.
var tokenErrors = []error{
	accesstoken.ErrMalformed, accesstoken.ErrHeader, accesstoken.ErrUnknownKey,
	accesstoken.ErrSignature, accesstoken.ErrExpired, accesstoken.ErrNotYet,
	accesstoken.ErrIssuer, accesstoken.ErrAudience, accesstoken.ErrClaims,
}

// isTokenError reports whether err says the token is bad, rather than that
// the server could not check it.
func isTokenError(err error) bool {
	for _, e := range tokenErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// verify returns the claims of a valid token. Its errors are either token
// errors (isTokenError) or a failure to read the key set.
func (tv *tokenVerifier) verify(token string) (*accesstoken.Claims, error) {
	e, ok := tv.cache.Get(token)
	tv.lookedUp(ok)
	if ok {
		if err := tv.v.CheckTime(e.claims); err != nil {
			tv.cache.Remove(token)
			return nil, err
		}
		published, err := tv.published(e.kid)
		if err != nil {
			return nil, err
		}
		if published {
			return e.claims, nil
		}
		tv.cache.Remove(token) // the key was withdrawn: verify from scratch
	}
	claims, err := tv.v.VerifySignature(token)
	if err != nil {
		if r, ok := tv.keys.(keyRefresher); ok && (errors.Is(err, accesstoken.ErrUnknownKey) || !isTokenError(err)) {
			// A key published since the last refresh, or keys not loaded
			// yet: ask for a refresh, which the source rate-limits so that
			// tokens with made-up kids cannot make it fetch per request.
			r.RefreshSoon()
		}
		return nil, err
	}
	if err := tv.v.CheckTime(claims); err != nil {
		return nil, err
	}
	tv.cache.Add(token, verifiedToken{claims: claims, kid: kidOf(token)})
	return claims, nil
}

// published reports whether the key set still holds kid.
func (tv *tokenVerifier) published(kid string) (bool, error) {
	set, err := tv.keys.KeySet()
	if err != nil {
		return false, fmt.Errorf("key set: %w", err)
	}
	_, ok := set.LookupKeyID(kid)
	return ok, nil
}

// kidOf reads the "kid" of a token whose signature was verified.
func kidOf(token string) string {
	hdr, _, _, err := jwsbb.SplitCompact([]byte(token[len(accesstoken.Prefix):]))
	if err != nil {
		return ""
	}
	kid, _ := jwsbb.HeaderGetString(jwsbb.HeaderParseCompact(hdr), jws.KeyIDKey)
	return kid
}
