package ratelimit_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/ratelimit"
	"github.com/partnerapi/authplatform/pkg/ratelimit/ratelimittest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

// exactCount is the number of admitted requests in (to-length, to].
func exactCount(admitted []int64, length, to int64) int64 {
	lo, _ := slices.BinarySearch(admitted, to-length+1)
	hi, _ := slices.BinarySearch(admitted, to+1)
	return int64(hi - lo)
}

// firstExactAdmission is the earliest time from now at which fewer than
// limit admitted requests lie in the last window: when an exact sliding log
// would admit again.
func firstExactAdmission(admitted []int64, limit, window, now int64) int64 {
	if int64(len(admitted)) < limit {
		return now
	}
	return max(now, admitted[int64(len(admitted))-limit]+window)
}

// windowCase is one random key: a limit, a window and a schedule.
type windowCase struct {
	limit  int64
	window time.Duration
	start  time.Time
	steps  int
	seed   uint64
}

func (c windowCase) String() string {
	return fmt.Sprintf("case{limit %d, window %v, start %d ms, %d steps, seed %d}", c.limit, c.window, c.start.UnixMilli(), c.steps, c.seed)
}

func randomCase(r *rand.Rand) windowCase {
	// Windows of a second and more: the key's TTL runs on the real clock
	// while the schedule's clock is injected, so a key must outlive a case.
	// 59 s, 61 s and 1001 ms have buckets that do not divide the window.
	windows := []time.Duration{time.Minute, time.Minute, 10 * time.Second, time.Second,
		59 * time.Second, 61 * time.Second, 1001 * time.Millisecond,
		time.Duration(1000+r.IntN(300_000)) * time.Millisecond}
	var limit int64
	switch p := r.IntN(10); {
	case p == 0:
		limit = int64(r.IntN(2)) // 0 or 1
	case p < 8:
		limit = 1 + int64(r.IntN(40))
	default:
		limit = 40 + int64(r.IntN(400))
	}
	return windowCase{
		limit:  limit,
		window: windows[r.IntN(len(windows))],
		start:  time.UnixMilli(1_900_000_000_000 + r.Int64N(1_000_000_000)),
		steps:  100 + r.IntN(300),
		seed:   r.Uint64(),
	}
}

// runWindowCase replays one random schedule against Limiter on rdb and
// checks every decision against windowModel, and the package's promise
// against the exact list of admitted times:
//   - never more than limit admitted in any window-long interval;
//   - every refusal is justified by at least limit admitted in the last
//     window plus one bucket (less a millisecond);
//   - a refusal's wait is when a request is admitted again, exact to the
//     bucket: no earlier than an exact sliding log would admit, less than a
//     bucket later, and never more than the window; a request at
//     now+wait-1 ms is refused, one at now+wait admitted, one after
//     RetryAfterSeconds admitted, one a whole window after the refusal
//     admitted (the clock carries sub-millisecond parts, which the script
//     never sees: the same instant a window later is always enough).
//
// It returns the number of refusals.
func runWindowCase(t *testing.T, rdb redis.UniversalClient, key string, c windowCase) int {
	t.Helper()
	r := rand.New(rand.NewPCG(c.seed, ^c.seed))
	clk := testclock.New(c.start)
	l := ratelimit.NewLimiter(rdb, c.limit, c.window, clk.Now)
	m := ratelimit.NewModel(c.limit, c.window)
	w := c.window.Milliseconds()
	b := (w + ratelimit.Buckets - 1) / ratelimit.Buckets
	at := c.start.UnixMilli()
	refused := 0
	ask := func(when int64, why string) ratelimit.Decision {
		t.Helper()
		clk.Set(time.UnixMilli(when).Add(time.Duration(r.Int64N(int64(time.Millisecond)))))
		got, err := l.Allow(t.Context(), key)
		if err != nil {
			t.Fatalf("%v: Allow: %v", c, err)
		}
		now := m.NowMS(when)
		before := slices.Clone(m.Admitted())
		if want := m.DecideMS(when); got != want {
			t.Fatalf("%v: %s at +%d ms: %+v, want %+v", c, why, when-c.start.UnixMilli(), got, want)
		}
		if !got.Allowed && c.limit > 0 {
			refused++
			if n := exactCount(before, w+b-1, now); n < c.limit {
				t.Fatalf("%v: refused at +%d ms with only %d admitted in the last %d ms", c, now-c.start.UnixMilli(), n, w+b-1)
			}
			exact := firstExactAdmission(before, c.limit, w, now)
			if got.Wait <= 0 || got.Wait > c.window {
				t.Fatalf("%v: refused at +%d ms, wait %v: not within (0, window]", c, now-c.start.UnixMilli(), got.Wait)
			}
			if again := now + got.Wait.Milliseconds(); again < exact || again > exact+b-1 {
				t.Fatalf("%v: refused at +%d ms, wait %v: again at %d, exact %d, bucket %d ms", c, now-c.start.UnixMilli(), got.Wait, again, exact, b)
			}
		}
		return got
	}
	for i := range c.steps {
		switch p := r.IntN(20); {
		case p < 6: // same millisecond
		case p < 12:
			at += r.Int64N(b + 1)
		case p < 17:
			at += r.Int64N(w/4 + 1)
		case p < 19:
			at += r.Int64N(2*w + 1)
		default:
			at -= r.Int64N(b + 1) // a clock behind the latest admission
		}
		d := ask(at, fmt.Sprintf("request %d", i))
		if d.Allowed || c.limit <= 0 || r.IntN(3) != 0 {
			continue
		}
		now := m.NowMS(at)
		switch r.IntN(3) {
		case 0: // probe the exact wait
			if again := ask(now+d.Wait.Milliseconds()-1, "a request 1 ms before the wait"); again.Allowed {
				t.Fatalf("%v: admitted 1 ms before the wait %v", c, d.Wait)
			}
			at = now + d.Wait.Milliseconds()
		case 1: // follow Retry-After
			at = now + d.RetryAfterSeconds()*1000
		case 2: // wait a whole window (an API 429's Retry-After)
			at = now + w
		}
		if again := ask(at, "a request after the wait"); !again.Allowed {
			t.Fatalf("%v: refused at +%d ms after waiting %v (Retry-After %d)", c, at-now, d.Wait, d.RetryAfterSeconds())
		}
	}
	if n := maxInAnyWindow(times(m.Admitted()), c.window); int64(n) > c.limit {
		t.Fatalf("%v: %d admitted in one window, limit %d", c, n, c.limit)
	}
	return refused
}

func times(msList []int64) []time.Time {
	out := make([]time.Time, len(msList))
	for i, v := range msList {
		out[i] = time.UnixMilli(v)
	}
	return out
}

// TestWindowProperty replays random schedules (random limits, windows and
// arrival times, an injected clock) on the real Redis and on miniredis and
// checks WindowLua against the reference model and its promise (see
// runWindowCase). The long suite runs many more.
func TestWindowProperty(t *testing.T) {
	testWindowProperty(t, map[string]int{"redis": 20, "miniredis": 4})
}

func TestWindowPropertyLong(t *testing.T) {
	redistest.Long(t)
	testWindowProperty(t, map[string]int{"redis": 1500, "miniredis": 150})
}

// testWindowProperty runs random cases per backend (miniredis runs scripts
// more slowly).
func testWindowProperty(t *testing.T, perBackend map[string]int) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, be := range redistest.Backends(t) {
		t.Run(be.Name, func(t *testing.T) {
			rdb, prefix, cases := be.Client, redistest.Prefix(t, be.Client), perBackend[be.Name]
			r := rand.New(rand.NewPCG(seed, 1))
			refused := 0
			for i := range cases {
				refused += runWindowCase(t, rdb, fmt.Sprintf("%sk%d", prefix, i), randomCase(r))
			}
			// And one schedule that reaches its limit whatever the seed
			// (a few random cases may all stay under theirs).
			refused += runWindowCase(t, rdb, prefix+"k-limit-1", windowCase{limit: 1, window: time.Minute,
				start: time.UnixMilli(1_900_000_000_000), steps: 200, seed: seed})
			// The schedules must reach the limits, or the refusals go unchecked.
			if refused == 0 {
				t.Fatalf("no refusal in %d cases", cases)
			}
			t.Logf("%d cases, %d refusals", cases, refused)
		})
	}
}

// TestWindowMemory: a 100,000,000-a-minute key under 20,000 requests spread
// over a minute and a half keeps one string of fixed size, far under 4 KB,
// where the sliding log's sorted set holds every request.
func TestWindowMemory(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	if err := rdb.Do(t.Context(), "MEMORY", "USAGE", prefix+"none").Err(); err != nil && err != redis.Nil {
		t.Skipf("MEMORY USAGE unsupported (not a real Redis): %v", err)
	}
	const limit, n = 100_000_000, 20_000
	script := ratelimit.LimiterScript
	if err := script.Load(t.Context(), rdb).Err(); err != nil {
		t.Fatal(err)
	}
	key := prefix + "{svc_x}:rl:api"
	start := tAligned.UnixMilli()
	var maxBytes int64
	for batch := 0; batch < n; batch += 1000 {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.Cmd, 0, 1000)
		for i := batch; i < batch+1000; i++ {
			cmds = append(cmds, script.EvalSha(t.Context(), pipe, []string{key}, limit, 60_000, start+int64(i)*90_000/n))
		}
		if _, err := pipe.Exec(t.Context()); err != nil {
			t.Fatal(err)
		}
		for i, cmd := range cmds {
			if v, err := cmd.Int64Slice(); err != nil || v[0] != 1 {
				t.Fatalf("request %d: %v, %v; want admitted", batch+i, v, err)
			}
		}
		bytes, err := rdb.MemoryUsage(t.Context(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		maxBytes = max(maxBytes, bytes)
	}
	// With the server's clock too.
	for range 100 {
		if err := script.Run(t.Context(), rdb, []string{key + "2"}, limit, 60_000, -1).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	iter := rdb.Scan(t.Context(), 0, prefix+"*", 1000).Iterator()
	for iter.Next(t.Context()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{key, key + "2"}; !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want only %v", keys, want)
	}
	for _, k := range keys {
		bytes, err := rdb.MemoryUsage(t.Context(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		maxBytes = max(maxBytes, bytes)
	}
	t.Logf("MEMORY USAGE at most %d bytes", maxBytes)
	if maxBytes >= 4096 {
		t.Fatalf("MEMORY USAGE %d bytes, want under 4 KB", maxBytes)
	}
}

// TestWindowTTL: the key lives exactly until its newest bucket leaves the
// window, so an idle key vanishes.
func TestWindowTTL(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	clk := testclock.New(tAligned.Add(250 * time.Millisecond))
	l := ratelimit.NewLimiter(rdb, 5, 10*time.Second, clk.Now) // 167 ms buckets
	if _, err := l.Allow(t.Context(), prefix+"k"); err != nil {
		t.Fatal(err)
	}
	// The bucket of now ends at the next multiple of 167 ms; the key lives
	// one window more.
	now := clk.Now().UnixMilli()
	want := (now/167+1)*167 + 10_000 - now
	ttl, err := rdb.PTTL(t.Context(), prefix+"k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if got := ttl.Milliseconds(); got > want || got < want-1000 {
		t.Fatalf("PTTL %d ms, want %d (less the test's own time)", got, want)
	}
	// A refusal leaves the key as it was.
	l0 := ratelimit.NewLimiter(rdb, 0, 10*time.Second, clk.Now)
	if d, err := l0.Allow(t.Context(), prefix+"k"); err != nil || d.Allowed || d.Count != 1 || d.Wait != 10*time.Second {
		t.Fatalf("limit 0: %+v, %v; want refused, count 1, wait the window", d, err)
	}
}

// TestWindowChange: a key's window changing carries its count into the
// current bucket, so a changed window never admits more than the limit.
func TestWindowChange(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		clk := testclock.New(tAligned)
		a := ratelimit.NewLimiter(rdb, 3, time.Minute, clk.Now)
		for range 3 {
			if _, err := a.Allow(t.Context(), prefix+"k"); err != nil {
				t.Fatal(err)
			}
		}
		clk.Add(30 * time.Second)
		b := ratelimit.NewLimiter(rdb, 4, 2*time.Minute, clk.Now)
		if d, err := b.Allow(t.Context(), prefix+"k"); err != nil || !d.Allowed || d.Count != 4 {
			t.Fatalf("after the change: %+v, %v; want admitted as the 4th", d, err)
		}
		if d, err := b.Allow(t.Context(), prefix+"k"); err != nil || d.Allowed || d.Count != 4 {
			t.Fatalf("after the change: %+v, %v; want refused at 4", d, err)
		}
	})
}

// TestWindowHugeLimit: a limit beyond the counters' 32 bits still admits.
func TestWindowHugeLimit(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		clk := testclock.New(tAligned)
		l := ratelimit.NewLimiter(rdb, math.MaxInt64, time.Minute, clk.Now)
		for i := range 3 {
			if d, err := l.Allow(t.Context(), prefix+"k"); err != nil || !d.Allowed || d.Count != int64(i+1) {
				t.Fatalf("request %d: %+v, %v; want admitted", i+1, d, err)
			}
		}
	})
}

// TestWindowTotal pins ratelimittest.Total to what WindowLua stores: the
// admitted requests as of the latest admission, refusals not counted.
func TestWindowTotal(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		clk := testclock.New(tAligned)
		l := ratelimit.NewLimiter(rdb, 4, time.Minute, clk.Now)
		for i := range 6 {
			clk.Add(1500 * time.Millisecond) // across buckets
			if _, err := l.Allow(t.Context(), prefix+"k"); err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
		}
		raw, err := rdb.Get(t.Context(), prefix+"k").Result()
		if err != nil {
			t.Fatal(err)
		}
		if n := ratelimittest.Total(raw); n != 4 {
			t.Errorf("Total %d, want 4 (6 requests, limit 4)", n)
		}
		if n := ratelimittest.Total("not a window"); n != 0 {
			t.Errorf("Total of another value %d, want 0", n)
		}
	})
}

// TestWindowLayout pins the ring's bytes (window.lua's header comment):
// servers of two versions share the keys during a rolling upgrade, so a
// change to how the script packs them must keep this layout. Three
// requests, two in one bucket and one two buckets later, then a refusal,
// which leaves the key as it was.
func TestWindowLayout(t *testing.T) {
	eachBackend(t, func(t *testing.T, rdb redis.UniversalClient, prefix string) {
		start := tAligned.Add(400 * time.Millisecond)
		clk := testclock.New(start)
		l := ratelimit.NewLimiter(rdb, 3, time.Minute, clk.Now) // 1,000 ms buckets
		for _, step := range []time.Duration{0, 250 * time.Millisecond, 1450 * time.Millisecond} {
			clk.Add(step)
			if d, err := l.Allow(t.Context(), prefix+"k"); err != nil || !d.Allowed {
				t.Fatalf("at +%v: %+v, %v; want admitted", clk.Now().Sub(start), d, err)
			}
		}
		clk.Add(time.Millisecond)
		if d, err := l.Allow(t.Context(), prefix+"k"); err != nil || d.Allowed {
			t.Fatalf("4th request: %+v, %v; want refused", d, err)
		}
		raw, err := rdb.Get(t.Context(), prefix+"k").Result()
		if err != nil {
			t.Fatal(err)
		}
		be := func(v int64, n int) []byte { // v as n big-endian bytes
			return binary.BigEndian.AppendUint64(nil, uint64(v))[8-n:]
		}
		k0 := start.UnixMilli() / 1000 // the first request's bucket
		want := make([]byte, 0, 22+7*61)
		want = append(want, be(start.UnixMilli()+1700, 6)...) // last: the latest admission
		want = append(want, be(k0, 6)...)                     // tail: the oldest counted bucket
		want = append(want, be(3, 6)...)                      // total
		want = append(want, be(1000, 4)...)                   // b, the bucket's ms
		slots := make([]byte, 7*61)
		copy(slots[7*(k0%61):], append(be(2, 4), be(650, 3)...))     // bucket k0: 2, newest at +650 ms
		copy(slots[7*((k0+2)%61):], append(be(1, 4), be(100, 3)...)) // bucket k0+2: 1, at +100 ms
		want = append(want, slots...)
		if raw != string(want) {
			t.Errorf("ring\n%x\nwant\n%x", raw, want)
		}
	})
}
