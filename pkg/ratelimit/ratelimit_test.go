package ratelimit_test

import (
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/ratelimit"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

var t0 = time.Date(2031, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// eachBackend runs fn against the real test Redis, a miniredis, a Redis
// Cluster and a Sentinel group, each with its own key prefix.
func eachBackend(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	for _, b := range redistest.AllBackends(t) {
		t.Run(b.Name, func(t *testing.T) {
			fn(t, b.Client, redistest.Prefix(t, b.Client))
		})
	}
}

// tAligned is a time on a whole second, so a minute's 1-second buckets start
// at tAligned plus whole seconds.
var tAligned = time.Date(2031, 3, 14, 15, 9, 26, 0, time.UTC)

// TestAllow walks one key through a minute's buckets (limit 3, 1-second
// buckets): a bucket, and every request in it, counts until its newest
// request is a minute old, so the first request at +0 s is counted until
// +60.9 s, when its bucket-mate at +0.9 s leaves.
func TestAllow(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		clk := testclock.New(tAligned)
		l := ratelimit.NewLimiter(rdb, 3, time.Minute, clk.Now)
		key := prefix + "k"
		ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
		tests := []struct {
			at    time.Duration
			allow bool
			count int64
			wait  time.Duration
		}{
			{0, true, 1, ms(60000)},
			// The bucket [0 s, 1 s) now leaves at +60.9 s.
			{ms(900), true, 2, ms(60000)},
			{ms(2250), true, 3, ms(58650)},
			// Refused: the oldest bucket leaves at +60.9 s.
			{ms(2250), false, 3, ms(58650)},
			// The request at +0 s is a minute old, its bucket-mate is not.
			{ms(60000), false, 3, ms(900)},
			{ms(60899), false, 3, ms(1)},
			{ms(60900), true, 2, ms(1350)},
			{ms(60900), true, 3, ms(1350)},
			// The bucket of +2.25 s leaves at +62.25 s.
			{ms(60900), false, 3, ms(1350)},
			{ms(62249), false, 3, ms(1)},
			{ms(62250), true, 3, ms(58650)},
			{time.Hour, true, 1, ms(60000)},
		}
		var sent time.Time // of the latest Allow of key
		for _, tc := range tests {
			clk.Set(tAligned.Add(tc.at))
			sent = time.Now()
			d, err := l.Allow(t.Context(), key)
			if err != nil {
				t.Fatalf("Allow: %v", err)
			}
			want := ratelimit.Decision{Allowed: tc.allow, Count: tc.count, Wait: tc.wait}
			if d != want {
				t.Errorf("at +%v: %+v, want %+v", tc.at, d, want)
			}
		}
		// Keys are independent.
		if d, err := l.Allow(t.Context(), prefix+"other"); err != nil || !d.Allowed || d.Count != 1 {
			t.Errorf("Allow(other key) = %+v, %v; want the first admitted request", d, err)
		}
		// The key expires when its newest bucket has left the window: a
		// minute after its latest admission, less the time since (Redis
		// counts it down in real time; no bound on how long that took).
		ttl, err := rdb.PTTL(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if least := time.Minute - time.Since(sent) - time.Millisecond; ttl < least || ttl > time.Minute {
			t.Errorf("PTTL = %v, want within [%v, 60s]", ttl, least.Round(time.Millisecond))
		}
	})
}

// maxInAnyWindow is the largest number of the sorted times that lie in one
// half-open interval [s, s+window).
func maxInAnyWindow(times []time.Time, window time.Duration) int {
	best, j := 0, 0
	for i := range times {
		j = max(j, i)
		for j+1 < len(times) && times[j+1].Sub(times[i]) < window {
			j++
		}
		best = max(best, j-i+1)
	}
	return best
}

func TestMaxInAnyWindow(t *testing.T) {
	at := func(ms ...int) []time.Time {
		var out []time.Time
		for _, m := range ms {
			out = append(out, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return out
	}
	for _, tc := range []struct {
		times []time.Time
		want  int
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 59999), 2},
		{at(0, 60000), 1},
		{at(0, 0, 30000, 60000, 60001, 119999), 3},
		{at(0, 0, 30000, 59999, 60001), 4},
	} {
		if got := maxInAnyWindow(tc.times, time.Minute); got != tc.want {
			t.Errorf("maxInAnyWindow(%v) = %d, want %d", tc.times, got, tc.want)
		}
	}
}

// TestBursts replays bursts of three times the limit around the edges of
// the window and checks that the limiter admits a full limit exactly when the
// previous burst is a minute old, not a millisecond earlier, and never more
// than the limit in any minute.
func TestBursts(t *testing.T) {
	const limit = 10
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var schedule []time.Time
	// Admitted: the bursts at 0, 60, 120 and 180 s.
	for _, off := range []time.Duration{0, ms(59999), ms(60000), ms(119999), ms(120000), ms(179999), ms(180000), ms(181000)} {
		for range 3 * limit {
			schedule = append(schedule, tAligned.Add(off))
		}
	}
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		clk := testclock.New(time.Time{})
		l := ratelimit.NewLimiter(rdb, limit, time.Minute, clk.Now)
		m := ratelimit.NewModel(limit, time.Minute)
		var admitted []time.Time
		for i, at := range schedule {
			clk.Set(at)
			got, err := l.Allow(t.Context(), prefix+"k")
			if err != nil {
				t.Fatal(err)
			}
			if want := m.DecideMS(at.UnixMilli()); got != want {
				t.Fatalf("request %d at +%v: %+v, want %+v", i, at.Sub(tAligned), got, want)
			}
			if got.Allowed {
				admitted = append(admitted, at)
			}
		}
		if len(admitted) != 4*limit {
			t.Fatalf("%d admitted, want %d (a full limit at 0, 60, 120 and 180 s)", len(admitted), 4*limit)
		}
		if n := maxInAnyWindow(admitted, time.Minute); n != limit {
			t.Fatalf("at most %d admitted in any minute, want exactly the limit %d", n, limit)
		}
	})
}

// TestRedisClock: with no injected clock (NowArg -1) the script reads the
// Redis server's TIME.
func TestRedisClock(t *testing.T) {
	if got := ratelimit.NowArg(nil); got != -1 {
		t.Fatalf("NowArg(nil) = %d, want -1", got)
	}
	if got := ratelimit.NowArg(func() time.Time { return t0 }); got != t0.UnixMilli() {
		t.Fatalf("NowArg(clock) = %d, want %d", got, t0.UnixMilli())
	}
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		l := ratelimit.NewLimiter(rdb, 2, time.Minute, nil)
		for i, want := range []bool{true, true, false} {
			d, err := l.Allow(t.Context(), prefix+"k")
			if err != nil {
				t.Fatalf("Allow: %v", err)
			}
			if d.Allowed != want || d.Wait <= 0 || d.Wait > time.Minute {
				t.Fatalf("request %d: %+v, want allowed=%v and a wait within (0, 60s]", i+1, d, want)
			}
		}
		// The requests were counted at the server's TIME: half a minute later
		// by that clock they still count, 61 s later they have left.
		srvTime, err := rdb.Time(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			after time.Duration
			allow bool
		}{{30 * time.Second, false}, {61 * time.Second, true}} {
			at := srvTime.Add(tc.after)
			d, err := ratelimit.NewLimiter(rdb, 2, time.Minute, func() time.Time { return at }).Allow(t.Context(), prefix+"k")
			if err != nil || d.Allowed != tc.allow {
				t.Fatalf("server TIME + %v: %+v, %v; want allowed=%v", tc.after, d, err, tc.allow)
			}
		}
	})
}

func TestAllowRedisDown(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer rdb.Close()
	l := ratelimit.NewLimiter(rdb, 1, time.Minute, nil)
	if d, err := l.Allow(t.Context(), "k"); err == nil || d.Allowed {
		t.Fatalf("Allow with no Redis = %+v, %v; want an error and no admission", d, err)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		wait time.Duration
		want int64
	}{
		{0, 1},
		{-time.Second, 1},
		{time.Millisecond, 1},
		{999 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Millisecond, 2},
		{49500 * time.Millisecond, 50},
		{59999 * time.Millisecond, 60},
		{time.Minute, 60},
	} {
		if got := (ratelimit.Decision{Wait: tc.wait}).RetryAfterSeconds(); got != tc.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tc.wait, got, tc.want)
		}
	}
}

// TestRetryAfterAndReset: a refusal by a minute's window answers
// Retry-After 60 and RateLimit-Reset 60 whatever its wait (never more than
// the window); an admission's reset is its wait rounded up.
func TestRetryAfterAndReset(t *testing.T) {
	for _, tc := range []struct {
		d                 ratelimit.Decision
		retryAfter, reset int64
	}{
		{ratelimit.Decision{Wait: time.Millisecond}, 60, 60},
		{ratelimit.Decision{Wait: 49500 * time.Millisecond}, 60, 60},
		{ratelimit.Decision{Wait: time.Minute}, 60, 60},
		{ratelimit.Decision{Wait: time.Minute + time.Millisecond}, 61, 61}, // never with WindowLua
		{ratelimit.Decision{Allowed: true, Wait: time.Minute}, 60, 60},
		{ratelimit.Decision{Allowed: true, Wait: 49500 * time.Millisecond}, 60, 50},
		{ratelimit.Decision{Allowed: true, Wait: time.Millisecond}, 60, 1},
	} {
		if got := tc.d.RetryAfter(time.Minute); got != tc.retryAfter {
			t.Errorf("%+v: RetryAfter(1m) = %d, want %d", tc.d, got, tc.retryAfter)
		}
		if got := tc.d.Reset(time.Minute); got != tc.reset {
			t.Errorf("%+v: Reset(1m) = %d, want %d", tc.d, got, tc.reset)
		}
	}
	if got := (ratelimit.Decision{Wait: time.Second}).RetryAfter(1500 * time.Millisecond); got != 2 {
		t.Errorf("RetryAfter(1.5s) = %d, want 2 (rounded up)", got)
	}
}

func TestRemaining(t *testing.T) {
	for _, tc := range []struct{ count, limit, want int64 }{
		{0, 10, 10}, {1, 10, 9}, {10, 10, 0}, {12, 10, 0},
	} {
		if got := (ratelimit.Decision{Count: tc.count}).Remaining(tc.limit); got != tc.want {
			t.Errorf("Remaining(count %d, limit %d) = %d, want %d", tc.count, tc.limit, got, tc.want)
		}
	}
}

func TestFromScript(t *testing.T) {
	if got, want := ratelimit.FromScript(1, 4, 1500), (ratelimit.Decision{Allowed: true, Count: 4, Wait: 1500 * time.Millisecond}); got != want {
		t.Errorf("FromScript(1, 4, 1500) = %+v, want %+v", got, want)
	}
	for _, a := range []int64{0, 2, -1} {
		if ratelimit.FromScript(a, 1, 1).Allowed {
			t.Errorf("FromScript(%d, ...) is allowed; only 1 means allowed", a)
		}
	}
}
