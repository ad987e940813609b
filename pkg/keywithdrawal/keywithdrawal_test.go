package keywithdrawal_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// eventually polls cond for up to 5 seconds and returns how long it took.
func eventually(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 5*time.Second {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
	return 0
}

// TestWithdrawReachesWatchers: a withdrawal reaches every watcher through
// the channel (the poll interval here is an hour, so only the message can
// deliver it), OnChange sees each new state once, and a watcher started
// later reads the state at start. On the real Redis and on miniredis.
func TestWithdrawReachesWatchers(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			prefix := redistest.Prefix(t, b.Client)
			store := keywithdrawal.NewStore(b.Client, prefix)
			var mu sync.Mutex
			var seen [2][]int64
			watch := func(i int) *keywithdrawal.Watcher {
				w := store.Watch(context.Background(), keywithdrawal.WatchOptions{PollInterval: time.Hour, OnChange: func(st keywithdrawal.State) {
					mu.Lock()
					seen[i] = append(seen[i], st.Version)
					mu.Unlock()
				}})
				t.Cleanup(w.Close)
				return w
			}
			a, b2 := watch(0), watch(1)
			if a.Withdrawn("k1") || a.State().Version != 0 {
				t.Fatalf("fresh state: %+v", a.State())
			}
			v, err := store.Withdraw(context.Background(), "k1")
			if err != nil || v != 1 {
				t.Fatalf("Withdraw = %d, %v", v, err)
			}
			for _, w := range []*keywithdrawal.Watcher{a, b2} {
				d := eventually(t, "the watcher sees k1 withdrawn", func() bool { return w.Withdrawn("k1") })
				t.Logf("seen after %s", d)
			}
			if a.Withdrawn("k2") {
				t.Error("k2 withdrawn too")
			}
			mu.Lock()
			got := seen
			mu.Unlock()
			for i, s := range got {
				if len(s) != 2 || s[0] != 0 || s[1] != 1 {
					t.Errorf("watcher %d: OnChange versions %v, want [0 1]", i, s)
				}
			}
			late := store.Watch(context.Background(), keywithdrawal.WatchOptions{})
			defer late.Close()
			if !late.Withdrawn("k1") || late.State().Version != 1 {
				t.Errorf("a watcher started after the withdrawal: %+v", late.State())
			}
		})
	}
}

// TestWithdrawLostMessage: a withdrawal whose message never arrives (here:
// written without PUBLISH, as when the watcher's connection was down) is
// seen at the next poll.
func TestWithdrawLostMessage(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	w := keywithdrawal.NewStore(rdb, prefix).Watch(context.Background(), keywithdrawal.WatchOptions{PollInterval: 200 * time.Millisecond})
	defer w.Close()
	ctx := context.Background()
	rdb.SAdd(ctx, prefix+"{signing-keys}:withdrawn", "k9")
	rdb.Incr(ctx, prefix+"{signing-keys}:version")
	d := eventually(t, "the poll sees k9", func() bool { return w.Withdrawn("k9") })
	t.Logf("seen by the poll after %s", d)
}

type source struct {
	set       jwk.Set
	refreshed atomic.Int32
	fetched   atomic.Int32
}

func (s *source) KeySet() (jwk.Set, error) { return s.set, nil }
func (s *source) RefreshSoon()             { s.refreshed.Add(1) }
func (s *source) FetchUnknownKey(context.Context, string) error {
	s.fetched.Add(1)
	return nil
}

// TestFilter: the filtered source hides withdrawn keys (so a token of one
// fails with ErrUnknownKey), keeps the others, follows later withdrawals,
// and passes RefreshSoon and FetchUnknownKey through, the latter only for
// a kid that is not withdrawn (fetching cannot bring a withdrawn key back).
func TestFilter(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	store := keywithdrawal.NewStore(rdb, prefix)
	k1, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	k2, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	ks, err := accesstoken.NewKeySet(k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	kid1, kid2 := ks.KeyIDs()[0], ks.KeyIDs()[1]
	src := &source{set: ks.Public()}
	w := store.Watch(context.Background(), keywithdrawal.WatchOptions{PollInterval: 50 * time.Millisecond})
	defer w.Close()
	f := w.Filter(src)
	iss, _ := accesstoken.NewIssuer(ks, "iss", "aud")
	tok, _, _ := iss.Issue(accesstoken.Grant{ClientID: "svc_aaaaaaaaaaaaaaaaaaaaaaaa", Generation: 1, Now: time.Now()})
	v := accesstoken.NewVerifier(f, "iss", "aud", nil)
	if _, err := v.Verify(tok); err != nil {
		t.Fatalf("before the withdrawal: %v", err)
	}
	if _, err := store.Withdraw(context.Background(), kid1); err != nil {
		t.Fatal(err)
	}
	eventually(t, "withdrawn", func() bool { return w.Withdrawn(kid1) })
	set, _ := f.KeySet()
	if _, ok := set.LookupKeyID(kid1); ok {
		t.Error("withdrawn key still in the filtered set")
	}
	if _, ok := set.LookupKeyID(kid2); !ok || set.Len() != 1 {
		t.Errorf("filtered set has %d keys; want only %s", set.Len(), kid2)
	}
	if _, err := v.Verify(tok); err != accesstoken.ErrUnknownKey {
		t.Errorf("token of the withdrawn key: %v, want ErrUnknownKey", err)
	}
	r, ok := f.(interface{ RefreshSoon() })
	if !ok {
		t.Fatal("filtered source lost RefreshSoon")
	}
	r.RefreshSoon()
	if src.refreshed.Load() != 1 {
		t.Error("RefreshSoon not passed through")
	}
	fe, ok := f.(accesstoken.KeyFetcher)
	if !ok {
		t.Fatal("filtered source lost FetchUnknownKey")
	}
	if err := fe.FetchUnknownKey(t.Context(), kid1); err != nil || src.fetched.Load() != 0 {
		t.Errorf("withdrawn kid: %v, %d fetches; want none", err, src.fetched.Load())
	}
	if err := fe.FetchUnknownKey(t.Context(), "new-kid"); err != nil || src.fetched.Load() != 1 {
		t.Errorf("unknown kid: %v, %d fetches; want 1", err, src.fetched.Load())
	}
}
