package jwks

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// jwksServer serves a key set that the test can change, or fail.
type jwksServer struct {
	*httptest.Server
	mu      sync.Mutex
	doc     []byte // nil: answer 503
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T) *jwksServer {
	s := &jwksServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		doc := s.doc
		s.mu.Unlock()
		if doc == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(doc)
	}))
	t.Cleanup(s.Close)
	return s
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

func newSource(t *testing.T, url string, onDemand time.Duration) *Source {
	t.Helper()
	src, err := New(context.Background(), url, Options{MinRefreshInterval: time.Hour, OnDemandInterval: onDemand})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	return src
}

// eventually polls cond for up to 5 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}

func TestSourceLoads(t *testing.T) {
	srv := newJWKSServer(t)
	ks := keySet(t)
	srv.serve(t, ks)
	src := newSource(t, srv.URL, time.Hour)
	eventually(t, "keys loaded", src.Ready)
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
}

// Unreachable at start: New returns at once, KeySet fails with ErrNotLoaded
// (and asks for a fetch), and the keys load once the server is back.
func TestSourceStartsWithoutKeys(t *testing.T) {
	srv := newJWKSServer(t)
	start := time.Now()
	src := newSource(t, srv.URL, 50*time.Millisecond)
	if d := time.Since(start); d > time.Second {
		t.Errorf("New waited %s for an unreachable JWKS", d)
	}
	if _, err := src.KeySet(); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("KeySet: %v, want ErrNotLoaded", err)
	}
	if src.Ready() {
		t.Fatal("ready without keys")
	}
	srv.serve(t, keySet(t))
	eventually(t, "keys loaded after the JWKS came back", func() bool {
		_, err := src.KeySet() // each failing call may start a fetch
		return err == nil
	})
}

// A key published after the last fetch is picked up by RefreshSoon, which
// fetches at most once per OnDemandInterval however often it is called.
func TestSourceRefreshSoon(t *testing.T) {
	srv := newJWKSServer(t)
	old := keySet(t)
	srv.serve(t, old)
	src := newSource(t, srv.URL, 300*time.Millisecond)
	eventually(t, "keys loaded", src.Ready)

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
	eventually(t, "new key seen", func() bool {
		set, _ := src.KeySet()
		_, ok := set.LookupKeyID(next.SigningKeyID())
		return ok
	})
	time.Sleep(100 * time.Millisecond)
	if n := srv.fetches.Load() - before; n != 1 {
		t.Errorf("%d fetches for 1000 RefreshSoon calls within the interval, want 1", n)
	}
	// After the interval, one more.
	time.Sleep(300 * time.Millisecond)
	src.RefreshSoon()
	eventually(t, "second fetch", func() bool { return srv.fetches.Load()-before == 2 })
}

// After Close, RefreshSoon fetches nothing; Close may be called again.
func TestSourceClose(t *testing.T) {
	srv := newJWKSServer(t)
	srv.serve(t, keySet(t))
	src := newSource(t, srv.URL, time.Millisecond)
	eventually(t, "keys loaded", src.Ready)
	if err := src.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := srv.fetches.Load()
	src.RefreshSoon()
	time.Sleep(50 * time.Millisecond)
	if n := srv.fetches.Load() - before; n != 0 {
		t.Errorf("%d fetches after Close", n)
	}
	if err := src.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// FetchUnknownKey returns once a fetch that started after the call has
// ended, with the new key in the set; 200 concurrent callers share one
// fetch; a flood of calls for made-up kids over 1.2 s starts at most one
// fetch per OnDemandInterval, every caller waiting for the next one rather
// than failing.
func TestSourceFetchUnknownKey(t *testing.T) {
	srv := newJWKSServer(t)
	old := keySet(t)
	srv.serve(t, old)
	const interval = 300 * time.Millisecond
	src := newSource(t, srv.URL, interval)
	eventually(t, "keys loaded", src.Ready)
	time.Sleep(interval) // the first fetch's own rate-limit slot

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
	if n, f := srv.fetches.Load()-before, failed.Load(); n < 1 || n > 2 || f != 0 {
		t.Errorf("200 concurrent callers: %d fetches, %d without the new key; want 1 or 2, and 0", n, f)
	}

	// A flood of made-up kids: at most one fetch per interval.
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
			}
		})
	}
	flood.Wait()
	elapsed := time.Since(start)
	n := srv.fetches.Load() - before
	t.Logf("%d calls for made-up kids in %v: %d fetches (interval %v)", calls.Load(), elapsed.Round(time.Millisecond), n, interval)
	if max := int32(elapsed/interval) + 1; n > max || n < 2 || failed.Load() != 0 {
		t.Errorf("%d fetches in %v (at most %d), %d failed calls", n, elapsed, max, failed.Load())
	}
}

// FetchUnknownKey waits at most OnDemandWait: a JWKS that does not answer
// is an error in bounded time, and a failing one an error at once.
func TestSourceFetchUnknownKeyBounded(t *testing.T) {
	srv := newJWKSServer(t)
	srv.serve(t, keySet(t))
	src, err := New(context.Background(), srv.URL, Options{MinRefreshInterval: time.Hour,
		OnDemandInterval: time.Millisecond, OnDemandWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close(context.Background()) })
	eventually(t, "keys loaded", src.Ready)
	srv.serve(t, nil) // 503
	if err := src.FetchUnknownKey(t.Context(), "x"); err == nil {
		t.Error("a failed fetch: nil error")
	}
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stuck.Close)
	src2, err := New(context.Background(), stuck.URL, Options{OnDemandWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src2.Close(context.Background()) })
	// Bounded by OnDemandWait (200 ms), not by the fetch's own timeout
	// (DefaultFetchTimeout, 10 s); 5 s leaves room for a loaded machine.
	start := time.Now()
	if err := src2.FetchUnknownKey(t.Context(), "x"); err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("unanswered JWKS: %v after %v, want an error after about 200ms", err, time.Since(start))
	}
}

// noneWithdrawn is a key authority of src's keys, none withdrawn.
type noneWithdrawn struct{ *Source }

func (noneWithdrawn) Withdrawn(string) bool { return false }
