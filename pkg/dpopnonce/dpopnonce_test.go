package dpopnonce_test

import (
	"os"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/dpopnonce"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// TestShared: two replicas on one Redis issue the same nonce and accept
// each other's; the secret is one key, kept for good; deleted, it is
// re-created and adopted by both on their refresh.
func TestShared(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	ctx := t.Context()
	a, err := dpopnonce.SharedNonces(ctx, rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	b, err := dpopnonce.SharedNonces(ctx, rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	if a.Nonce(now) != b.Nonce(now) || !b.Valid(a.Nonce(now), now) || !a.Valid(b.Nonce(now), now) {
		t.Fatal("two replicas disagree on the nonce")
	}
	if ttl, err := rdb.PTTL(ctx, dpopnonce.Key(prefix)).Result(); err != nil || ttl != -1 {
		t.Fatalf("secret PTTL = %v, %v; want -1 (for good)", ttl, err)
	}
	old := a.Nonce(now)
	if err := rdb.Del(ctx, dpopnonce.Key(prefix)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if b.Valid(old, now) {
		t.Fatal("the old secret's nonce is still valid after the secret was replaced")
	}
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if a.Nonce(now) != b.Nonce(now) {
		t.Fatal("after a refresh the replicas disagree")
	}
	if err := rdb.Set(ctx, dpopnonce.Key(prefix), "short", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(ctx); err == nil {
		t.Fatal("a malformed secret was accepted")
	}
	if a.Nonce(now) != b.Nonce(now) {
		t.Fatal("a failed refresh dropped the current secret")
	}
}
