package api

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
)

const detailRateLimited = "rate limit exceeded; retry after the time in Retry-After"

// The 121st request within a minute answers 429 whichever replica it hits;
// once the first second's requests have left the minute (package ratelimit
// counts whole one-second buckets), as many are admitted again.
func TestRateLimitAcrossReplicas(t *testing.T) {
	f := newFixture(t)
	replicas := []*server{f.server(), f.server()}
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")
	// The first request counts until its second has left the minute.
	leaves := f.clock.Now().Truncate(time.Second).Add(61*time.Second - time.Millisecond)
	resetAt := func() string {
		return strconv.FormatInt(int64((leaves.Sub(f.clock.Now())+time.Second-1)/time.Second), 10)
	}

	for i := range 120 {
		rec := doGet(t, replicas[i%2].handler, "/api/v1/me/", tok)
		if rec.Code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, rec.Code, rec.Body)
		}
		wantHeader(t, rec, map[string]string{
			"RateLimit-Limit":     "120",
			"RateLimit-Remaining": strconv.Itoa(119 - i),
			// Whole seconds (rounded up) until the first request's second
			// has left the minute.
			"RateLimit-Reset": resetAt(),
		})
		f.clock.Add(100 * time.Millisecond) // 120 requests in 12 seconds
	}
	for i, s := range replicas {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		rec := serve(s.handler, req)
		wantJSON(t, rec, http.StatusTooManyRequests, map[string]any{"detail": detailRateLimited})
		wantHeader(t, rec, map[string]string{
			"Retry-After":         "60",
			"RateLimit-Limit":     "120",
			"RateLimit-Remaining": "0",
			"RateLimit-Reset":     resetAt(),
			"Cache-Control":       "no-store",
			"WWW-Authenticate":    "",
		})
		f.validate(req, rec)
		if t.Failed() {
			t.Fatalf("replica %d", i)
		}
	}
	// Just before the first second has left the minute: still refused.
	f.clock.Set(leaves.Add(-time.Millisecond))
	if rec := doGet(t, replicas[0].handler, "/api/v1/me/", tok); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("1 ms before the first second has left: %d", rec.Code)
	}
	// Then the requests of the first request's second are gone: as many
	// are admitted again, then refused.
	f.clock.Set(leaves)
	n := 0
	for ; n < 20; n++ {
		if rec := doGet(t, replicas[n%2].handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
			break
		}
	}
	if n == 0 || n > 10 {
		t.Fatalf("%d requests admitted when the first second left; want 1 to 10 (that second's)", n)
	}
	if rec := doGet(t, replicas[0].handler, "/api/v1/me/", tok); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("then: %d", rec.Code)
	}
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
	// the oldest second in full (package ratelimit's one-second buckets).
	counted := func(at time.Time) int {
		n := 0
		for _, a := range admitted {
			if !a.After(at) && at.Before(a.Truncate(time.Second).Add(61*time.Second)) {
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
	// Retry-After: the spec's 60, or RateLimit-Reset when that is longer
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
