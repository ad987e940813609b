package keywithdrawal_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

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
				d := testwait.Eventually(t, 5*time.Second, "the watcher sees k1 withdrawn", func() bool { return w.Withdrawn("k1") })
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
	d := testwait.Eventually(t, 5*time.Second, "the poll sees k9", func() bool { return w.Withdrawn("k9") })
	t.Logf("seen by the poll after %s", d)
}

// source is a key authority as the resource server builds it: a key set
// that can fetch (counted) plus a Watcher's withdrawn kids.
type source struct {
	set     jwk.Set
	w       *keywithdrawal.Watcher
	fetched atomic.Int32
}

func (s *source) KeySet() (jwk.Set, error)  { return s.set, nil }
func (s *source) Withdrawn(kid string) bool { return s.w.Withdrawn(kid) }
func (s *source) FetchUnknownKey(context.Context, string) error {
	s.fetched.Add(1)
	return nil
}

// TestWithdrawnRefused: with a Watcher as the key authority's withdrawn
// kids, a verifier refuses a withdrawn key's tokens as soon as the watcher
// sees the withdrawal, its cached verification included, while the set
// still holds the key; the other key's tokens live on, and a withdrawn kid
// never makes the source fetch (fetching cannot bring it back).
func TestWithdrawnRefused(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	store := keywithdrawal.NewStore(rdb, prefix)
	k1, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	k2, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	ks, err := accesstoken.NewKeySet(k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	kid1 := ks.KeyIDs()[0]
	other, err := ks.Promoted(ks.KeyIDs()[1])
	if err != nil {
		t.Fatal(err)
	}
	w := store.Watch(context.Background(), keywithdrawal.WatchOptions{PollInterval: time.Hour})
	defer w.Close()
	src := &source{set: ks.Public(), w: w}
	v := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(src, "iss", "aud", nil), 0, nil)
	issue := func(ks *accesstoken.KeySet) string {
		iss, _ := accesstoken.NewIssuer(ks, "iss", "aud")
		tok, _, err := iss.Issue(accesstoken.Grant{ClientID: "svc_aaaaaaaaaaaaaaaaaaaaaaaa", Generation: 1, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	tok, otherTok := issue(ks), issue(other)
	for _, tk := range []string{tok, otherTok} {
		if _, err := v.Verify(tk); err != nil { // cached now
			t.Fatalf("before the withdrawal: %v", err)
		}
	}
	if _, err := store.Withdraw(context.Background(), kid1); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, "the withdrawn key's token refused", func() bool {
		_, err := v.Verify(tok)
		return errors.Is(err, accesstoken.ErrWithdrawnKey)
	})
	if _, err := v.Verify(otherTok); err != nil {
		t.Errorf("the other key's token: %v", err)
	}
	if src.fetched.Load() != 0 {
		t.Errorf("%d fetches for a withdrawn kid; want none", src.fetched.Load())
	}
}
