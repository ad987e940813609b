package ratelimit_test

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/ratelimit"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

// fakeClock is the tests' hand-moved clock.
type fakeClock = testclock.Clock

var t0 = time.Date(2031, 3, 14, 15, 9, 26, 535_000_000, time.UTC)

// eachBackend runs fn against the real test Redis and a miniredis, each
// with its own key prefix.
func eachBackend(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient, prefix string)) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			fn(t, b.Client, redistest.Prefix(t, b.Client))
		})
	}
}

func TestAllow(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		clk := testclock.New(t0)
		l := ratelimit.NewLimiter(rdb, 3, 10*time.Second, clk.Now)
		key := prefix + "k"
		tests := []struct {
			at    time.Duration
			allow bool
			count int64
			wait  time.Duration
		}{
			{0, true, 1, 10 * time.Second},
			{1 * time.Second, true, 2, 9 * time.Second},
			{2 * time.Second, true, 3, 8 * time.Second},
			{2 * time.Second, false, 3, 8 * time.Second},
			{9999 * time.Millisecond, false, 3, time.Millisecond},
			// The first request leaves the window exactly 10 s after it entered.
			{10 * time.Second, true, 3, time.Second},
			{10 * time.Second, false, 3, time.Second},
			{12 * time.Second, true, 2, 8 * time.Second},
			{time.Hour, true, 1, 10 * time.Second},
		}
		for _, tc := range tests {
			clk.Set(t0.Add(tc.at))
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
		clk.Set(t0.Add(time.Hour))
		if d, err := l.Allow(t.Context(), prefix+"other"); err != nil || !d.Allowed || d.Count != 1 {
			t.Errorf("Allow(other key) = %+v, %v; want the first admitted request", d, err)
		}
		// The log expires on its own.
		ttl, err := rdb.PTTL(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > 10*time.Second {
			t.Errorf("PTTL = %v, want within (0, 10s]", ttl)
		}
	})
}

// model is the reference sliding log: a request at now is admitted when
// fewer than limit admitted requests lie in (now-window, now].
type model struct {
	limit    int64
	window   time.Duration
	admitted []time.Time
}

func (m *model) decide(now time.Time) ratelimit.Decision {
	var in []time.Time
	for _, a := range m.admitted {
		if now.Sub(a) < m.window {
			in = append(in, a)
		}
	}
	if int64(len(in)) < m.limit {
		m.admitted = append(m.admitted, now)
		oldest := now
		if len(in) > 0 {
			oldest = in[0]
		}
		return ratelimit.Decision{Allowed: true, Count: int64(len(in)) + 1, Wait: oldest.Add(m.window).Sub(now)}
	}
	return ratelimit.Decision{Allowed: false, Count: int64(len(in)), Wait: max(in[0].Add(m.window).Sub(now), time.Millisecond)}
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

// TestAnyWindow replays request schedules and checks every decision against
// the model, then that no 60-second interval holds more than the limit.
func TestAnyWindow(t *testing.T) {
	const limit = 10
	var bursts []time.Time
	for _, off := range []time.Duration{0, 59900 * time.Millisecond, time.Minute, 119990 * time.Millisecond,
		2 * time.Minute, 179999 * time.Millisecond, 3 * time.Minute} {
		for range 3 * limit {
			bursts = append(bursts, t0.Add(off))
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random schedule seed %d", seed)
	r := rand.New(rand.NewPCG(seed, ^seed))
	var random []time.Time
	at := t0
	for range 600 {
		switch p := r.IntN(10); {
		case p < 3:
		case p < 8:
			at = at.Add(time.Duration(r.IntN(800)) * time.Millisecond)
		default:
			at = at.Add(time.Duration(r.IntN(30_000)) * time.Millisecond)
		}
		random = append(random, at)
	}
	for name, schedule := range map[string][]time.Time{"bursts": bursts, "random": random} {
		t.Run(name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
				clk := testclock.New(time.Time{})
				l := ratelimit.NewLimiter(rdb, limit, time.Minute, clk.Now)
				m := &model{limit: limit, window: time.Minute}
				var admitted []time.Time
				refused := 0
				for i, at := range schedule {
					clk.Set(at)
					got, err := l.Allow(t.Context(), prefix+"k")
					if err != nil {
						t.Fatal(err)
					}
					if want := m.decide(at); got != want {
						t.Fatalf("request %d at +%v: %+v, want %+v", i, at.Sub(t0), got, want)
					}
					if got.Allowed {
						admitted = append(admitted, at)
					} else {
						refused++
					}
				}
				if refused == 0 {
					t.Fatal("the schedule never reached the limit")
				}
				if n := maxInAnyWindow(admitted, time.Minute); n != limit {
					t.Fatalf("at most %d admitted in any minute, want exactly the limit %d", n, limit)
				}
				if name == "bursts" && len(admitted) != 4*limit {
					t.Fatalf("bursts: %d admitted, want %d (a full limit at 0, 60, 120 and 180 s)", len(admitted), 4*limit)
				}
			})
		})
	}
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
		// The entries are scored on the server's clock, in milliseconds.
		srvTime, err := rdb.Time(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		zs, err := rdb.ZRangeWithScores(t.Context(), prefix+"k", 0, -1).Result()
		if err != nil || len(zs) != 2 {
			t.Fatalf("log = %v, %v; want 2 entries", zs, err)
		}
		for _, z := range zs {
			if d := srvTime.Sub(time.UnixMilli(int64(z.Score))); d < 0 || d > 10*time.Second {
				t.Errorf("entry scored %v, %v before the server's TIME %v", int64(z.Score), d, srvTime)
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

func TestMember(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{24}$`)
	var seen []string
	for range 1000 {
		m := ratelimit.Member()
		if !re.MatchString(m) {
			t.Fatalf("Member() = %q", m)
		}
		seen = append(seen, m)
	}
	slices.Sort(seen)
	if len(slices.Compact(seen)) != 1000 {
		t.Fatal("Member() repeated a value")
	}
}
