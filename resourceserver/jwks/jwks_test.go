package jwks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// The tests run in a testing/synctest bubble: the rate limits are asserted
// on its fake clock, to the millisecond, and the JWKS is served in process
// (no network I/O, which would not let the bubble's clock move), through
// Options.HTTPClient.

// jwksURL is where the in-process JWKS answers.
const jwksURL = "http://tokenserver.test/.well-known/jwks.json"

// jwksServer serves a key set that the test can change, or fail.
type jwksServer struct {
	URL     string
	client  *http.Client
	mu      sync.Mutex
	doc     []byte        // nil: answer 503
	gate    chan struct{} // not nil: answers wait, the set read, until it is closed
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T) *jwksServer {
	s := &jwksServer{URL: jwksURL}
	s.client = inProcessClient(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		doc, gate := s.doc, s.gate
		s.mu.Unlock()
		if gate != nil {
			<-gate
		}
		if doc == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(doc)
	}))
	return s
}

// inProcessClient is an HTTP client whose requests h answers in process.
func inProcessClient(h http.Handler) *http.Client {
	return &http.Client{Timeout: DefaultFetchTimeout, Transport: handlerTransport{h}}
}

// handlerTransport answers a request by calling its handler.
type handlerTransport struct{ h http.Handler }

func (ht handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, r)
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	return rec.Result(), nil
}

func (s *jwksServer) serve(t *testing.T, ks *accesstoken.KeySet) {
	var doc []byte
	if ks != nil {
		var err error
		if doc, err = ks.PublicJSON(); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	s.doc = doc
	s.mu.Unlock()
}

func keySet(t *testing.T) *accesstoken.KeySet {
	t.Helper()
	k, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := accesstoken.NewKeySet(k)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func newSource(t *testing.T, srv *jwksServer, onDemand time.Duration) *Source {
	t.Helper()
	src, err := New(context.Background(), srv.URL, Options{HTTPClient: srv.client, MinRefreshInterval: time.Hour, OnDemandInterval: onDemand})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	return src
}

// loaded waits (on the bubble's clock) for src's first set.
func loaded(t *testing.T, src *Source) {
	t.Helper()
	testwait.Eventually(t, 5*time.Second, "keys loaded", src.Ready)
}

func TestSourceLoads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newJWKSServer(t)
		ks := keySet(t)
		srv.serve(t, ks)
		src := newSource(t, srv, time.Hour)
		loaded(t, src)
		set, err := src.KeySet()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := set.LookupKeyID(ks.SigningKeyID()); !ok {
			t.Error("signing key missing from the fetched set")
		}
		// Tokens of the published key verify through the Source.
		iss, _ := accesstoken.NewIssuer(ks, "iss", "aud")
		tok, _, _ := iss.Issue(accesstoken.Grant{ClientID: "svc_aaaaaaaaaaaaaaaaaaaaaaaa", Generation: 1, Now: time.Now()})
		if _, err := accesstoken.NewVerifier(noneWithdrawn{src}, "iss", "aud", nil).Verify(tok); err != nil {
			t.Errorf("verify: %v", err)
		}
	})
}

// Unreachable at start: New returns at once, KeySet fails with ErrNotLoaded
// (and asks for a fetch), and the keys load once the server is back, at the
// first KeySet call an OnDemandInterval after the last fetch it asked for.
func TestSourceStartsWithoutKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newJWKSServer(t)
		start := time.Now()
		const interval = 50 * time.Millisecond
		src := newSource(t, srv, interval)
		if d := time.Since(start); d != 0 {
			t.Errorf("New waited %s for an unreachable JWKS", d)
		}
		synctest.Wait() // the cache's first fetch has failed
		if _, err := src.KeySet(); !errors.Is(err, ErrNotLoaded) {
			t.Fatalf("KeySet: %v, want ErrNotLoaded", err)
		}
		synctest.Wait() // the fetch KeySet asked for has failed too
		if src.Ready() {
			t.Fatal("ready without keys")
		}
		srv.serve(t, keySet(t))
		keys := func() error {
			_, err := src.KeySet()
			synctest.Wait() // the fetch it may have started has ended
			return err
		}
		time.Sleep(interval - time.Millisecond)
		if err := keys(); !errors.Is(err, ErrNotLoaded) {
			t.Fatalf("KeySet within the interval: %v, want ErrNotLoaded", err)
		}
		if src.Ready() {
			t.Fatal("a fetch within the interval")
		}
		time.Sleep(time.Millisecond)
		if err := keys(); !errors.Is(err, ErrNotLoaded) {
			t.Fatalf("KeySet at the interval: %v, want ErrNotLoaded (it starts the fetch)", err)
		}
		if err := keys(); err != nil {
			t.Errorf("KeySet after the fetch it asked for: %v", err)
		}
	})
}

// A key published after the last fetch is picked up by RefreshSoon, which
// fetches at most once per OnDemandInterval however often it is called: not
// a millisecond before the interval has passed, and again once it has.
func TestSourceRefreshSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newJWKSServer(t)
		old := keySet(t)
		srv.serve(t, old)
		const interval = 300 * time.Millisecond
		src := newSource(t, srv, interval)
		loaded(t, src)

		newKey, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
		if err != nil {
			t.Fatal(err)
		}
		next, err := old.Rotated(newKey, 1)
		if err != nil {
			t.Fatal(err)
		}
		srv.serve(t, next)
		before := srv.fetches.Load()
		for range 1000 {
			src.RefreshSoon()
		}
		synctest.Wait()
		set, _ := src.KeySet()
		if _, ok := set.LookupKeyID(next.SigningKeyID()); !ok {
			t.Error("new key not seen after RefreshSoon")
		}
		if n := srv.fetches.Load() - before; n != 1 {
			t.Errorf("%d fetches for 1000 RefreshSoon calls, want 1", n)
		}
		// A millisecond short of the interval: none; at the interval: one.
		time.Sleep(interval - time.Millisecond)
		src.RefreshSoon()
		synctest.Wait()
		if n := srv.fetches.Load() - before; n != 1 {
			t.Errorf("%d fetches %v after the first, want 1", n, interval-time.Millisecond)
		}
		time.Sleep(time.Millisecond)
		src.RefreshSoon()
		synctest.Wait()
		if n := srv.fetches.Load() - before; n != 2 {
			t.Errorf("%d fetches %v after the first, want 2", n, interval)
		}
	})
}

// After Close, RefreshSoon fetches nothing; Close may be called again.
func TestSourceClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newJWKSServer(t)
		srv.serve(t, keySet(t))
		src := newSource(t, srv, time.Millisecond)
		loaded(t, src)
		if err := src.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := srv.fetches.Load()
		src.RefreshSoon()
		time.Sleep(time.Second)
		synctest.Wait()
		if n := srv.fetches.Load() - before; n != 0 {
			t.Errorf("%d fetches after Close", n)
		}
		if err := src.Close(context.Background()); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

// FetchUnknownKey returns once a fetch that started after the call has
// ended, with the new key in the set; 200 concurrent callers share one
// fetch; a flood of calls for made-up kids over 1.2 s starts at most one
// fetch per OnDemandInterval, every caller waiting for the next one rather
// than failing.
func TestSourceFetchUnknownKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newJWKSServer(t)
		old := keySet(t)
		srv.serve(t, old)
		const interval = 300 * time.Millisecond
		src := newSource(t, srv, interval)
		loaded(t, src)

		newKey, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
		if err != nil {
			t.Fatal(err)
		}
		next, err := old.Rotated(newKey, 1)
		if err != nil {
			t.Fatal(err)
		}
		srv.serve(t, next)
		before := srv.fetches.Load()
		var wg sync.WaitGroup
		var failed atomic.Int32
		for range 200 {
			wg.Go(func() {
				if err := src.FetchUnknownKey(t.Context(), next.SigningKeyID()); err != nil {
					failed.Add(1)
				}
				set, _ := src.KeySet()
				if _, ok := set.LookupKeyID(next.SigningKeyID()); !ok {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if n, f := srv.fetches.Load()-before, failed.Load(); n != 1 || f != 0 {
			t.Errorf("200 concurrent callers: %d fetches, %d without the new key; want 1 and 0", n, f)
		}

		// A flood of made-up kids, one call a millisecond from each of 16
		// callers: one fetch per interval, at 300, 600, 900 and 1200 ms.
		before = srv.fetches.Load()
		start := time.Now()
		var calls atomic.Int32
		var flood sync.WaitGroup
		for range 16 {
			flood.Go(func() {
				for time.Since(start) < 1200*time.Millisecond {
					if err := src.FetchUnknownKey(t.Context(), "made-up"); err != nil {
						failed.Add(1)
					}
					calls.Add(1)
					time.Sleep(time.Millisecond)
				}
			})
		}
		flood.Wait()
		elapsed := time.Since(start)
		n := srv.fetches.Load() - before
		t.Logf("%d calls for made-up kids in %v: %d fetches (interval %v)", calls.Load(), elapsed, n, interval)
		if want := int32(elapsed / interval); n != want || failed.Load() != 0 {
			t.Errorf("%d fetches in %v, want %d; %d failed calls", n, elapsed, want, failed.Load())
		}
	})
}

// A fetch under way when FetchUnknownKey is called may have read the set
// before the key was published: the call waits for it, then for a fetch of
// its own at the next interval, and returns with the new key.
func TestSourceFetchUnknownKeyAfterTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newJWKSServer(t)
		old := keySet(t)
		srv.serve(t, old)
		const interval = 300 * time.Millisecond
		src := newSource(t, srv, interval)
		loaded(t, src)

		gate := make(chan struct{})
		srv.mu.Lock()
		srv.gate = gate
		srv.mu.Unlock()
		before := srv.fetches.Load()
		start := time.Now()
		src.RefreshSoon() // reads the old set, then waits at the gate
		synctest.Wait()
		time.Sleep(time.Millisecond)
		newKey, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
		if err != nil {
			t.Fatal(err)
		}
		next, err := old.Rotated(newKey, 1)
		if err != nil {
			t.Fatal(err)
		}
		srv.serve(t, next)
		returned := make(chan error, 1)
		go func() { returned <- src.FetchUnknownKey(t.Context(), next.SigningKeyID()) }()
		synctest.Wait()
		close(gate) // the earlier fetch ends, with the old set
		synctest.Wait()
		select {
		case err := <-returned:
			t.Fatalf("FetchUnknownKey returned %v with the fetch that started before it", err)
		default:
		}
		if err := <-returned; err != nil {
			t.Fatalf("FetchUnknownKey: %v", err)
		}
		if d := time.Since(start); d != interval {
			t.Errorf("FetchUnknownKey returned %v after the earlier fetch started, want %v", d, interval)
		}
		set, _ := src.KeySet()
		if _, ok := set.LookupKeyID(next.SigningKeyID()); !ok {
			t.Error("new key not in the set")
		}
		if n := srv.fetches.Load() - before; n != 2 {
			t.Errorf("%d fetches, want 2", n)
		}
	})
}

// FetchUnknownKey waits at most OnDemandWait: a JWKS that does not answer
// is an error after exactly that long, and a failing one an error at once.
func TestSourceFetchUnknownKeyBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newJWKSServer(t)
		srv.serve(t, keySet(t))
		const wait = 200 * time.Millisecond
		src, err := New(context.Background(), srv.URL, Options{HTTPClient: srv.client, MinRefreshInterval: time.Hour,
			OnDemandInterval: time.Millisecond, OnDemandWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = src.Close(context.Background()) })
		loaded(t, src)
		srv.serve(t, nil) // 503
		start := time.Now()
		if err := src.FetchUnknownKey(t.Context(), "x"); err == nil || time.Since(start) != 0 {
			t.Errorf("a failed fetch: %v after %v, want an error at once", err, time.Since(start))
		}
		hang := make(chan struct{})
		stuck := inProcessClient(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}))
		src2, err := New(context.Background(), jwksURL, Options{HTTPClient: stuck, OnDemandWait: wait})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = src2.Close(context.Background()) })
		t.Cleanup(func() { close(hang) }) // before src2.Close
		// Bounded by OnDemandWait, not by the fetch's own timeout
		// (DefaultFetchTimeout, 10 s).
		start = time.Now()
		if err := src2.FetchUnknownKey(t.Context(), "x"); err == nil || time.Since(start) != wait {
			t.Errorf("unanswered JWKS: %v after %v, want an error after %v", err, time.Since(start), wait)
		}
	})
}

// noneWithdrawn is a key authority of src's keys, none withdrawn.
type noneWithdrawn struct{ *Source }

func (noneWithdrawn) Withdrawn(string) bool { return false }

// Unreachable at start and nobody asking for the keys: the failed first
// load is tried again after 250 ms, then after twice as long each time up
// to 2 s, until a set is loaded, and then no more (issue 59, hole 15: a
// resource server started with the token service had no keys 8 s later).
func TestSourceRetriesFirstLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newJWKSServer(t)
		src := newSource(t, srv, time.Hour)
		synctest.Wait() // the cache's first fetch has failed
		start := time.Now()
		fetchesAt := func(d time.Duration) int32 {
			time.Sleep(d - time.Since(start))
			synctest.Wait()
			return srv.fetches.Load()
		}
		// Retries at 250 ms, 750 ms (+500), 1.75 s (+1 s), 3.75 s (+2 s),
		// 5.75 s (+2 s): five by 5.75 s, none a millisecond before each.
		for i, at := range []time.Duration{250 * time.Millisecond, 750 * time.Millisecond, 1750 * time.Millisecond, 3750 * time.Millisecond, 5750 * time.Millisecond} {
			if n := fetchesAt(at - time.Millisecond); n != int32(i+1) {
				t.Fatalf("%v: %d fetches, want %d", at-time.Millisecond, n, i+1)
			}
			if n := fetchesAt(at); n != int32(i+2) {
				t.Fatalf("%v: %d fetches, want %d", at, n, i+2)
			}
		}
		if src.Ready() {
			t.Fatal("ready without keys")
		}
		srv.serve(t, keySet(t))
		if n := fetchesAt(7750 * time.Millisecond); n != 7 || !src.Ready() {
			t.Fatalf("at 7.75 s: %d fetches, ready %v; want 7 and the keys loaded", n, src.Ready())
		}
		// Loaded: no more retries.
		if n := fetchesAt(20 * time.Second); n != 7 {
			t.Errorf("%d fetches after the keys loaded, want none", n-7)
		}
	})
}
