package accesstoken_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// swappableKeys is a key source whose set and withdrawn kids the test
// replaces, and which counts fetches for unknown keys (as the resource
// server's JWKS source); a fetch publishes next, if set, or fails with
// fetchErr.
type swappableKeys struct {
	mu        sync.Mutex
	set       jwk.Set
	err       error
	withdrawn map[string]bool
	refreshes int
	kids      []string
	next      jwk.Set
	fetchErr  error
}

func (k *swappableKeys) KeySet() (jwk.Set, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.set, k.err
}

func (k *swappableKeys) Withdrawn(kid string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.withdrawn[kid]
}

func (k *swappableKeys) withdraw(kid string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.withdrawn == nil {
		k.withdrawn = map[string]bool{}
	}
	k.withdrawn[kid] = true
}

func (k *swappableKeys) FetchUnknownKey(_ context.Context, kid string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refreshes++
	k.kids = append(k.kids, kid)
	if k.fetchErr != nil {
		return k.fetchErr
	}
	if k.next != nil {
		k.set, k.err, k.next = k.next, nil, nil
	}
	return nil
}

func (k *swappableKeys) swap(set jwk.Set, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.set, k.err = set, err
}

// lookups counts the cache's hits and misses.
type lookups struct{ hits, misses int }

func (l *lookups) count(hit bool) {
	if hit {
		l.hits++
	} else {
		l.misses++
	}
}

// The signature of a token is checked once; its time on every use; a token
// whose key leaves the set is refused; a key set that cannot be read is not
// an invalid token.
func TestCachingVerifier(t *testing.T) {
	f := newFixture(t, "EdDSA")
	keys := &swappableKeys{set: f.ks.Public()}
	clock := now
	var l lookups
	cv := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(keys, issuer, audience, func() time.Time { return clock }), 2, l.count)
	tok, want := f.issue(t, grant(1))

	for range 5 {
		c, err := cv.Verify(tok)
		if err != nil || c.ID != want.ID {
			t.Fatalf("Verify = %+v, %v", c, err)
		}
	}
	if l.misses != 1 || l.hits != 4 {
		t.Errorf("5 uses of one token: %d misses, %d hits; want 1 and 4", l.misses, l.hits)
	}

	// One second before "exp" still good from the cache; at "exp" refused,
	// and dropped (the next use verifies again).
	clock = now.Add(accesstoken.Lifetime - time.Second)
	if _, err := cv.Verify(tok); err != nil {
		t.Fatalf("before exp: %v", err)
	}
	clock = now.Add(accesstoken.Lifetime)
	for i := range 2 {
		if _, err := cv.Verify(tok); !errors.Is(err, accesstoken.ErrExpired) || !errors.Is(err, accesstoken.ErrInvalidToken) {
			t.Fatalf("at exp (%d): %v, want ErrExpired, an ErrInvalidToken", i, err)
		}
	}
	if l.misses != 2 {
		t.Errorf("expired token: %d misses, want 2 (dropped from the cache)", l.misses)
	}

	// A cached token whose key was withdrawn from the set is refused.
	clock = now
	if _, err := cv.Verify(tok); err != nil {
		t.Fatal(err)
	}
	other := newFixture(t, "EdDSA")
	keys.swap(other.ks.Public(), nil)
	if _, err := cv.Verify(tok); !errors.Is(err, accesstoken.ErrUnknownKey) {
		t.Fatalf("withdrawn key: %v, want ErrUnknownKey", err)
	}
	if keys.refreshes != 1 {
		t.Errorf("unknown kid: %d refreshes, want 1", keys.refreshes)
	}

	// A bad signature under a known key is invalid, and no reason to refresh.
	otherTok, _ := other.issue(t, grant(1))
	forged := otherTok[:len(otherTok)-2] + "AA"
	if forged == otherTok {
		forged = otherTok[:len(otherTok)-2] + "AB"
	}
	if _, err := cv.Verify(forged); !errors.Is(err, accesstoken.ErrInvalidToken) || keys.refreshes != 1 {
		t.Fatalf("bad signature: %v, %d refreshes", err, keys.refreshes)
	}

	// Keys not loaded: an error that is not ErrInvalidToken (503, not 401);
	// the source fetches them itself (no kid to look for); the cached token
	// is not served either.
	if _, err := cv.Verify(otherTok); err != nil {
		t.Fatal(err)
	}
	keys.swap(nil, errors.New("not loaded"))
	for _, tk := range []string{otherTok, tok} {
		if _, err := cv.Verify(tk); err == nil || errors.Is(err, accesstoken.ErrInvalidToken) {
			t.Fatalf("keys unreadable: %v, want a key set error", err)
		}
	}
	if keys.refreshes != 1 {
		t.Errorf("keys unreadable: %d fetches for unknown keys, want still 1", keys.refreshes)
	}
}

// A token of a key published since the source last fetched is verified
// after the fetch it triggers, never refused; a kid still unknown after the
// fetch is refused; a failed fetch is a key set error (503), not an invalid
// token (401).
func TestCachingVerifierFetchesUnknownKey(t *testing.T) {
	f := newFixture(t, "EdDSA")
	next := newFixture(t, "EdDSA")
	keys := &swappableKeys{set: f.ks.Public(), next: next.ks.Public()}
	cv := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(keys, issuer, audience, func() time.Time { return now }), 10, nil)
	tok, want := next.issue(t, grant(1))
	c, err := cv.VerifyContext(t.Context(), tok)
	if err != nil || c.ID != want.ID {
		t.Fatalf("first token of a newly published key: %+v, %v; want verified after one fetch", c, err)
	}
	if keys.refreshes != 1 || keys.kids[0] != next.ks.SigningKeyID() {
		t.Errorf("%d fetches for kids %v, want 1 for %s", keys.refreshes, keys.kids, next.ks.SigningKeyID())
	}
	if _, err := cv.VerifyContext(t.Context(), tok); err != nil || keys.refreshes != 1 {
		t.Errorf("again: %v after %d fetches, want verified from the cache", err, keys.refreshes)
	}
	junk := newFixture(t, "EdDSA")
	junkTok, _ := junk.issue(t, grant(1))
	if _, err := cv.VerifyContext(t.Context(), junkTok); !errors.Is(err, accesstoken.ErrUnknownKey) || keys.refreshes != 2 {
		t.Errorf("a kid still unknown after the fetch: %v after %d fetches, want ErrUnknownKey after 2", err, keys.refreshes)
	}
	keys.mu.Lock()
	keys.fetchErr = errors.New("token service down")
	keys.mu.Unlock()
	if _, err := cv.VerifyContext(t.Context(), junkTok); err == nil || errors.Is(err, accesstoken.ErrInvalidToken) {
		t.Errorf("failed fetch: %v, want a key set error", err)
	}
}

// Every reason a token is refused is an ErrInvalidToken, and still itself.
func TestErrInvalidToken(t *testing.T) {
	for _, err := range []error{accesstoken.ErrMalformed, accesstoken.ErrHeader, accesstoken.ErrUnknownKey,
		accesstoken.ErrSignature, accesstoken.ErrExpired, accesstoken.ErrNotYet, accesstoken.ErrIssuer,
		accesstoken.ErrAudience, accesstoken.ErrClaims} {
		if !errors.Is(err, accesstoken.ErrInvalidToken) || !errors.Is(err, err) {
			t.Errorf("%v is not an ErrInvalidToken", err)
		}
		if errors.Is(err, accesstoken.ErrMalformed) != (err == accesstoken.ErrMalformed) {
			t.Errorf("%v is ErrMalformed", err)
		}
	}
	if errors.Is(errors.New("key set: down"), accesstoken.ErrInvalidToken) {
		t.Error("an unrelated error is an ErrInvalidToken")
	}
}

// A key withdrawn by the key source stops its tokens at once, cached ones
// included, while the set still holds it (the JWKS not fetched again yet);
// a token of a withdrawn key never makes the source fetch; the other keys'
// tokens live on.
func TestCachingVerifierWithdrawnKey(t *testing.T) {
	f := newFixture(t, "EdDSA")
	other := newFixture(t, "EdDSA")
	set := f.ks.Public()
	k, _ := other.ks.Public().Key(0)
	if err := set.AddKey(k); err != nil {
		t.Fatal(err)
	}
	keys := &swappableKeys{set: set}
	cv := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(keys, issuer, audience, func() time.Time { return now }), 10, nil)
	tok, _ := f.issue(t, grant(1))
	otherTok, _ := other.issue(t, grant(1))
	for _, tk := range []string{tok, otherTok} {
		if _, err := cv.Verify(tk); err != nil { // cached now
			t.Fatal(err)
		}
	}
	keys.withdraw(f.ks.SigningKeyID())
	for range 2 {
		if _, err := cv.VerifyContext(t.Context(), tok); !errors.Is(err, accesstoken.ErrWithdrawnKey) || !errors.Is(err, accesstoken.ErrInvalidToken) {
			t.Errorf("token of a withdrawn key: %v, want ErrWithdrawnKey", err)
		}
	}
	if keys.refreshes != 0 {
		t.Errorf("%d fetches for a withdrawn key, want none", keys.refreshes)
	}
	if _, err := cv.Verify(otherTok); err != nil {
		t.Errorf("token of a key not withdrawn: %v", err)
	}
}
