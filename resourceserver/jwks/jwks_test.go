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
	if _, err := accesstoken.NewVerifier(src, "iss", "aud", nil).Verify(tok); err != nil {
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
