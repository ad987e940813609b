package tokenserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/jwksuri"
)

// JWKSPolicy is what the operator allows of clients' jwks_uri: https and
// global unicast addresses only, unless the operator allows otherwise
// (package jwksuri, the one place it is decided).
type JWKSPolicy = jwksuri.Policy

// Keys of jwks_uri clients.
const (
	// jwksTTL is how long fetched keys are used before they are fetched
	// again; an assertion with a kid the keys lack fetches them at once,
	// at most once per jwksRefetchEvery per client.
	jwksTTL          = 5 * time.Minute
	jwksRefetchEvery = 10 * time.Second
	// jwksRetryEvery is how soon a failed fetch is tried again: the
	// partner's endpoint is back within seconds of being back.
	jwksRetryEvery = 2 * time.Second
	// keysLoadTimeout bounds one load (a registry read and a fetch), which
	// every request waiting for it shares.
	keysLoadTimeout = jwksuri.FetchTimeout + 2*time.Second
)

// errKeysUnavailable: the client's keys could not be fetched from its
// jwks_uri (unreachable, refused by the policy, not a valid set), so its
// assertion cannot be checked. It is not a failed authentication: nothing
// is counted against the client's failure budget or the address's ceiling,
// and the client may retry after Retry-After (jwksRetryEvery).
var errKeysUnavailable = &oauthError{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable",
	Description: "The client's public keys could not be fetched from its jwks_uri; retry after the number of seconds in Retry-After"}

// keyRegistry is what the assertion keys need of the client registry.
type keyRegistry interface {
	ClientKeys(ctx context.Context, id string) (clients.ClientKeys, error)
}

// assertionKeys caches each private_key_jwt client's public keys in memory,
// so an assertion costs no extra round trip: the authentication script
// compares the version verified against with the client's, and a stale
// version reloads them (StaleKeys). Keys behind a jwks_uri are fetched
// under the operator's policy (jwksuri.Fetcher) and kept jwksTTL; a fetch
// that fails is logged with the client id, counted
// (partnerapi_jwks_uri_fetches_total) and tried again after
// jwksRetryEvery, and meanwhile the client's assertions are answered
// errKeysUnavailable.
//
// Entries are never changed once cached, only replaced; every load runs
// once per client at a time (singleflight) on a context of its own, so one
// caller giving up fails no other waiting for it.
type assertionKeys struct {
	reg     keyRegistry
	now     func() time.Time
	log     *slog.Logger
	metrics recorder
	cache   *lru.Cache[string, *keysEntry]
	flight  singleflight.Group
	fetcher *jwksuri.Fetcher
	// addMu makes keep's read and replace of an entry one step.
	addMu sync.Mutex
}

// keysEntry is one client's keys as cached. It is not changed once cached.
type keysEntry struct {
	keys clients.ClientKeys
	// fetched is when a jwks_uri's keys.Set was fetched (zero: registered
	// keys, or never fetched); tried is when it was last fetched or tried,
	// and failed says that try failed (keys.Set is then the set fetched
	// before, while within jwksTTL, or nil).
	fetched, tried time.Time
	failed         bool
}

// fresh reports whether e may be used at now without loading it again.
func (e *keysEntry) fresh(now time.Time) bool {
	switch {
	case e.keys.URL == "":
		return true
	case e.failed:
		return now.Sub(e.tried) < jwksRetryEvery
	}
	return now.Sub(e.fetched) < jwksTTL
}

// refetchEvery is how soon after its last try e's jwks_uri may be fetched
// again for a kid it lacks: jwksRetryEvery after a failed try.
func (e *keysEntry) refetchEvery() time.Duration {
	if e.failed {
		return jwksRetryEvery
	}
	return jwksRefetchEvery
}

// unavailable reports whether e's keys could not be fetched.
func (e *keysEntry) unavailable() bool { return e.failed && e.keys.Set == nil }

// keysWant is what a caller of get needs.
type keysWant int

const (
	// keysCached: the cached keys, unless stale.
	keysCached keysWant = iota
	// keysReload: the keys read again (their version changed: StaleKeys).
	keysReload
	// keysRefetch: a jwks_uri's keys fetched again (an assertion named a
	// kid they lack: the partner rotated), unless they were tried within
	// jwksRefetchEvery (jwksRetryEvery after a failed try).
	keysRefetch
)

func newAssertionKeys(reg keyRegistry, now func() time.Time, policy JWKSPolicy, log *slog.Logger, m recorder) (*assertionKeys, error) {
	cache, err := lru.New[string, *keysEntry](10_000)
	if err != nil {
		return nil, err
	}
	return &assertionKeys{reg: reg, now: now, log: log, metrics: m, cache: cache, fetcher: jwksuri.NewFetcher(policy)}, nil
}

// get returns the client's keys: cached ones when fresh and want is
// keysCached, else those of a load (shared with every concurrent caller
// for the same client and want). A caller whose ctx ends stops waiting;
// the load goes on for the others.
func (k *assertionKeys) get(ctx context.Context, id string, want keysWant) (*keysEntry, error) {
	if e, ok := k.cache.Get(id); ok && want == keysCached && e.fresh(k.now()) {
		return e, nil
	}
	ch := k.flight.DoChan(strconv.Itoa(int(want))+id, func() (any, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keysLoadTimeout)
		defer cancel()
		return k.load(lctx, id, want)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*keysEntry), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// load reads the client's keys from the registry and fetches a jwks_uri's,
// unless another load made them fresh meanwhile (or, for keysRefetch,
// tried them within jwksRefetchEvery); it caches and returns them.
func (k *assertionKeys) load(ctx context.Context, id string, want keysWant) (*keysEntry, error) {
	now := k.now()
	cur, have := k.cache.Get(id)
	switch {
	case have && want == keysCached && cur.fresh(now):
		return cur, nil
	case have && want == keysRefetch && (cur.keys.URL == "" || now.Sub(cur.tried) < cur.refetchEvery()):
		return cur, nil
	}
	ck, err := k.reg.ClientKeys(ctx, id)
	if err != nil {
		return nil, err
	}
	e := &keysEntry{keys: ck}
	if ck.URL != "" {
		e.tried = now
		set, err := k.fetcher.Fetch(ctx, ck.URL)
		result := "success"
		switch {
		case err == nil:
			e.keys.Set, e.fetched = set, now
		case errors.Is(err, jwksuri.ErrRefused):
			result = "refused"
		default:
			result = "failure"
		}
		k.metrics.JWKSURIFetched(result)
		if err != nil {
			e.failed = true
			// A set fetched before keeps verifying its kids while it is
			// within jwksTTL (a refetch for a new kid failed).
			if have && cur.keys.URL == ck.URL && cur.keys.Set != nil && now.Sub(cur.fetched) < jwksTTL {
				e.keys.Set, e.fetched = cur.keys.Set, cur.fetched
			}
			k.log.WarnContext(ctx, "jwks_uri fetch "+result, "client_id", id, "jwks_uri", ck.URL, "err", err,
				"retry_in", jwksRetryEvery.String(), "keeps_earlier_keys", e.keys.Set != nil)
		}
	}
	return k.keep(id, e), nil
}

// keep caches e for id unless the entry cached meanwhile was tried later:
// a cached load and a refetch of one client run as separate flights, and
// the one that started first, finishing last, replaced the other's entry
// with an older try time, letting one more refetch through
// (TestKeysConcurrentUnit counted 13 fetches for 12 allowed). It returns
// the entry kept.
func (k *assertionKeys) keep(id string, e *keysEntry) *keysEntry {
	k.addMu.Lock()
	defer k.addMu.Unlock()
	if cur, ok := k.cache.Get(id); ok && cur.tried.After(e.tried) {
		return cur
	}
	k.cache.Add(id, e)
	return e
}
