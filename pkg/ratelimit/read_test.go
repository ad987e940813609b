package ratelimit_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/ratelimit"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

// TestReadWindow pins ReadWindow to what window_limit counts: the same
// count as its next decision, per bucket in the right second, and
// buckets that left the window not counted.
func TestReadWindow(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		clk := testclock.New(tAligned)
		l := ratelimit.NewLimiter(rdb, 100, time.Minute, clk.Now)
		allow := func(n int) {
			for range n {
				if _, err := l.Allow(t.Context(), prefix+"k"); err != nil {
					t.Fatal(err)
				}
			}
		}
		allow(3) // second 0
		clk.Add(30 * time.Second)
		allow(2)                  // second 30
		clk.Add(10 * time.Second) // now: second 40
		raw, err := rdb.Get(t.Context(), prefix+"k").Result()
		if err != nil {
			t.Fatal(err)
		}
		w := ratelimit.ReadWindow(raw, clk.Now(), time.Minute)
		if w.Count != 5 || w.PerBucket[59-40] != 3 || w.PerBucket[59-10] != 2 || len(w.PerBucket) != ratelimit.Buckets {
			t.Fatalf("at 40 s: %+v", w)
		}
		// At 61 s the first three have left the window.
		if w := ratelimit.ReadWindow(raw, clk.Now().Add(21*time.Second), time.Minute); w.Count != 2 {
			t.Fatalf("at 61 s: count %d, want 2", w.Count)
		}
		// The limiter counts the same two, and the one it admits.
		clk.Add(21 * time.Second)
		if d, err := l.Allow(t.Context(), prefix+"k"); err != nil || d.Count != 3 {
			t.Fatalf("the limiter's count at 61 s: %d, %v; want 3", d.Count, err)
		}
		if w := ratelimit.ReadWindow("not a window", clk.Now(), time.Minute); w.Count != 0 {
			t.Fatalf("another value: %+v", w)
		}
	})
}
