package api

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
)

const detailRateLimited = "rate limit exceeded; retry after the time in Retry-After"

// The 121st request within a minute answers 429 whichever replica it hits,
// with Retry-After and RateLimit-Reset both 60; a 200's RateLimit-Reset is
// the whole seconds until the oldest counted requests leave. Package
// ratelimit counts one-second buckets, each until its newest request is a
// minute old: the first second's ten requests leave together a minute
// after the tenth, and as many are admitted again.
func TestRateLimitAcrossReplicas(t *testing.T) {
	f := newFixture(t)
	f.clock.Set(f.clock.Now().Truncate(time.Second).Add(time.Second))
	t0 := f.clock.Now()
	replicas := []*server{f.server(), f.server()}
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")
	// The first second's newest request is the tenth, at +0.9 s.
	leaves := t0.Add(900*time.Millisecond + time.Minute)

	for i := range 120 {
		rec := doGet(t, replicas[i%2].handler, "/api/v1/me/", tok)
		if rec.Code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, rec.Code, rec.Body)
		}
		// Whole seconds (rounded up) until the first second's newest
		// request so far is a minute old.
		newest := t0.Add(time.Duration(min(i, 9)) * 100 * time.Millisecond)
		reset := (newest.Add(time.Minute).Sub(f.clock.Now()) + time.Second - 1) / time.Second
		wantHeader(t, rec, map[string]string{
			"RateLimit-Limit":     "120",
			"RateLimit-Remaining": strconv.Itoa(119 - i),
			"RateLimit-Reset":     strconv.FormatInt(int64(reset), 10),
		})
		f.clock.Add(100 * time.Millisecond) // 120 requests in 12 seconds
	}
	refused := func(what string) {
		t.Helper()
		for i, s := range replicas {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			rec := serve(s.handler, req)
			wantJSON(t, rec, http.StatusTooManyRequests, map[string]any{"detail": detailRateLimited})
			wantHeader(t, rec, map[string]string{
				"Retry-After":         "60",
				"RateLimit-Limit":     "120",
				"RateLimit-Remaining": "0",
				"RateLimit-Reset":     "60",
				"Cache-Control":       "no-store",
				"WWW-Authenticate":    "",
			})
			f.validate(req, rec)
			if t.Failed() {
				t.Fatalf("%s, replica %d", what, i)
			}
		}
	}
	refused("the 121st")
	// Just before the first second has left the minute: still refused, and
	// Retry-After is still 60 (waiting longer than needed is still true).
	f.clock.Set(leaves.Add(-time.Millisecond))
	refused("1 ms before the first second leaves")
	// Then the first second's ten requests are gone: ten are admitted
	// again, then refused.
	f.clock.Set(leaves)
	for n := range 10 {
		if rec := doGet(t, replicas[n%2].handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
			t.Fatalf("request %d when the first second left: %d", n+1, rec.Code)
		}
	}
	refused("the 11th when the first second left")
}

// TestRateLimitRetryAfterIsTrue: Retry-After 60 on a 429 is always enough.
// The 121st request of a window in the same instant as the 120 before it
// (sub-millisecond parts included) is refused with Retry-After 60 and
// RateLimit-Reset 60 (never 61); a request a millisecond under 60 s later
// is still refused, one exactly 60 s later, having sent nothing since, is
// admitted (the limiter's clock is whole milliseconds, rounded down alike
// for both requests); and so is one exactly 60 s after a refusal later in
// the first request's second.
func TestRateLimitRetryAfterIsTrue(t *testing.T) {
	f := newFixture(t)
	f.clock.Set(f.clock.Now().Truncate(time.Second).Add(time.Second + 999_999_999*time.Nanosecond))
	s := f.server()
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")
	for i := range 120 {
		if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, rec.Code)
		}
	}
	want429 := func(what string) {
		t.Helper()
		rec := doGet(t, s.handler, "/api/v1/me/", tok)
		wantJSON(t, rec, http.StatusTooManyRequests, map[string]any{"detail": detailRateLimited})
		wantHeader(t, rec, map[string]string{"Retry-After": "60", "RateLimit-Reset": "60", "RateLimit-Remaining": "0"})
		if t.Failed() {
			t.Fatal(what)
		}
	}
	want200 := func(what string) {
		t.Helper()
		if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", what, rec.Code, rec.Body)
		}
	}
	refusedAt := f.clock.Now()
	want429("the 121st in the same instant")
	f.clock.Set(refusedAt.Add(time.Minute - time.Millisecond))
	want429("a millisecond under 60 s after the 429")
	f.clock.Set(refusedAt.Add(time.Minute))
	want200("exactly 60 s after the 429")

	// A refusal 0.4 s into the window's first second: 60 s after it is
	// enough too (and needed: the 120 admitted in the same instant leave
	// together).
	f.clock.Add(2 * time.Minute)
	first := f.clock.Now()
	for range 119 {
		want200("a new window")
	}
	f.clock.Add(400 * time.Millisecond)
	want200("the 120th, 0.4 s later")
	want429("the 121st, 0.4 s after the first")
	refusedAt = f.clock.Now()
	f.clock.Set(first.Add(time.Minute - time.Millisecond))
	want429("before the first 119 are a minute old")
	f.clock.Set(refusedAt.Add(time.Minute))
	want200("60 s after the 429")
}

// Whatever the rhythm, no more than the limit succeed in any 60-second
// window, and requests are admitted again once the window allows.
func TestRateLimitSlidingWindow(t *testing.T) {
	f := newFixture(t)
	replicas := []*server{f.server(), f.server(), f.server()}
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")
	const limit = 120
	rng := rand.New(rand.NewPCG(1, 2))

	start := f.clock.Now()
	var admitted, refused []time.Time
	for f.clock.Now().Sub(start) < 5*time.Minute {
		// Bursts and pauses: mostly quick requests, now and then a long gap.
		switch rng.IntN(100) {
		case 0:
			f.clock.Add(time.Duration(rng.IntN(30_000)) * time.Millisecond)
		default:
			f.clock.Add(time.Duration(rng.IntN(200)) * time.Millisecond)
		}
		rec := doGet(t, replicas[rng.IntN(len(replicas))].handler, "/api/v1/me/", tok)
		switch rec.Code {
		case http.StatusOK:
			admitted = append(admitted, f.clock.Now())
		case http.StatusTooManyRequests:
			refused = append(refused, f.clock.Now())
		default:
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	if len(refused) == 0 {
		t.Fatal("the test never reached the limit")
	}
	// inWindow counts the requests admitted in the minute up to at.
	inWindow := func(at time.Time) int {
		n := 0
		for _, a := range admitted {
			if !a.After(at) && at.Sub(a) < time.Minute {
				n++
			}
		}
		return n
	}
	// Never more than the limit in any 60 seconds...
	for _, at := range admitted {
		if n := inWindow(at); n > limit {
			t.Fatalf("%d requests admitted in the 60 s up to %s, limit %d", n, at.Sub(start), limit)
		}
	}
	// ...and a request is refused only when the limit is reached, counting
	// a one-second bucket until its newest request is a minute old (package
	// ratelimit).
	bucketNewest := map[time.Time]time.Time{}
	for _, a := range admitted {
		bucketNewest[a.Truncate(time.Second)] = a
	}
	counted := func(at time.Time) int {
		n := 0
		for _, a := range admitted {
			newest := bucketNewest[a.Truncate(time.Second)]
			if newest.After(at) { // admitted after at, in the same second
				newest = at
			}
			if !a.After(at) && at.Sub(newest) < time.Minute {
				n++
			}
		}
		return n
	}
	for _, at := range refused {
		if n := counted(at); n < limit {
			t.Fatalf("refused at %s with %d admitted in the minute and second before, limit %d", at.Sub(start), n, limit)
		}
	}
	t.Logf("%d admitted, %d refused over 5 minutes", len(admitted), len(refused))
}

// Concurrent requests on several replicas: exactly the limit succeed.
func TestRateLimitConcurrent(t *testing.T) {
	f := newFixture(t)
	replicas := []*server{f.server(), f.server()}
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")

	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			rec := doGet(t, replicas[i%2].handler, "/api/v1/me/", tok)
			mu.Lock()
			codes[rec.Code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if codes[http.StatusOK] != 120 || codes[http.StatusTooManyRequests] != 80 {
		t.Errorf("answers %v, want 120 x 200 and 80 x 429", codes)
	}
}

// A limit changed with clients.Store.SetRateLimit (authserver clients
// set-rate-limit) applies on the next request.
func TestSetRateLimit(t *testing.T) {
	f := newFixture(t)
	s := f.server()
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")
	ctx := context.Background()

	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
		t.Fatalf("%d", rec.Code)
	}
	if _, err := f.store.SetRateLimit(ctx, c.ID, 3); err != nil {
		t.Fatal(err)
	}
	rec := doGet(t, s.handler, "/api/v1/me/", tok)
	if got := decode(t, rec)["rate_limit_per_minute"]; got != float64(3) {
		t.Errorf("rate_limit_per_minute %v, want 3", got)
	}
	wantHeader(t, rec, map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": "1"})
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
		t.Fatalf("third: %d", rec.Code)
	}
	rec = doGet(t, s.handler, "/api/v1/me/", tok)
	wantJSON(t, rec, http.StatusTooManyRequests, map[string]any{"detail": detailRateLimited})
	// Retry-After: the 60 of apidocs/guides/rate-limits.md (Limits), or
	// RateLimit-Reset when that is longer
	// (the oldest second counts in full: up to 61).
	retry := max(60, mustAtoi(t, rec.Header().Get("RateLimit-Reset")))
	wantHeader(t, rec, map[string]string{"RateLimit-Limit": "3", "RateLimit-Remaining": "0", "Retry-After": strconv.Itoa(retry)})

	if _, err := f.store.SetRateLimit(ctx, c.ID, 200); err != nil {
		t.Fatal(err)
	}
	rec = doGet(t, s.handler, "/api/v1/me/", tok)
	if rec.Code != http.StatusOK || decode(t, rec)["rate_limit_per_minute"] != float64(200) {
		t.Fatalf("after raising: %d %s", rec.Code, rec.Body)
	}
	wantHeader(t, rec, map[string]string{"RateLimit-Limit": "200", "RateLimit-Remaining": "196"})
}

// Limits are per client: one client's exhaustion does not touch another's.
func TestRateLimitPerClient(t *testing.T) {
	f := newFixture(t)
	s := f.server()
	a := f.client("org-a", clients.EnvironmentLive, clients.AudienceHospital)
	b := f.client("org-b", clients.EnvironmentLive, clients.AudienceHospital)
	if _, err := f.store.SetRateLimit(context.Background(), a.ID, 1); err != nil {
		t.Fatal(err)
	}
	ta, tb := f.token(a, ""), f.token(b, "")
	for _, want := range []int{200, 429, 429} {
		if rec := doGet(t, s.handler, "/api/v1/me/", ta); rec.Code != want {
			t.Fatalf("client a: %d, want %d", rec.Code, want)
		}
	}
	rec := doGet(t, s.handler, "/api/v1/me/", tb)
	if rec.Code != http.StatusOK {
		t.Fatalf("client b: %d", rec.Code)
	}
	wantHeader(t, rec, map[string]string{"RateLimit-Remaining": "119"})
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("not a whole number: %q", s)
	}
	return n
}

// setRateLimitHeaders stores its fields by key, without Header.Set: each
// key must be the canonical form of the field's name, or Header.Get would
// not find it and a second spelling could be written beside it.
func TestRateLimitHeaderKeys(t *testing.T) {
	for name, key := range map[string]string{
		"RateLimit-Limit":     headerRateLimitLimit,
		"RateLimit-Remaining": headerRateLimitRemaining,
		"RateLimit-Reset":     headerRateLimitReset,
	} {
		if want := textproto.CanonicalMIMEHeaderKey(name); key != want {
			t.Errorf("key of %s = %q, want %q", name, key, want)
		}
	}
}
