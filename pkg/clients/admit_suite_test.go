package clients_test

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

func testAdmitAPI(t *testing.T, e *env) {
	e.org(t, "acme", clients.EnvironmentSandbox)
	c, _ := e.client(t, clients.ClientSpec{OrgSlug: "acme", Name: "Adherence dashboard", Audience: clients.AudiencePharma,
		Scopes: []string{clients.ScopeProgrammeMetricsRead}})
	a, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 1), e.clock.Now)
	if err != nil {
		t.Fatalf("AdmitAPI: %v", err)
	}
	want := clients.APIAdmission{
		Outcome:  clients.Admitted,
		Decision: ratelimit.Decision{Allowed: true, Count: 1, Wait: firstWait()},
		Description: clients.Description{
			Name: "Adherence dashboard", Audience: clients.AudiencePharma,
			OrgName: "Org acme", OrgSlug: "acme", Environment: clients.EnvironmentSandbox,
			RateLimitPerMinute: 120,
		},
	}
	if a != want {
		t.Fatalf("AdmitAPI = %+v, want %+v", a, want)
	}
	if got := a.Decision.Remaining(a.Description.RateLimitPerMinute); got != 119 {
		t.Errorf("Remaining = %d, want 119", got)
	}

	dead := func(gen int64) {
		t.Helper()
		a, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, gen), e.clock.Now)
		if err != nil || a.Outcome != clients.Dead || a.Decision.Allowed || a.Description != (clients.Description{}) {
			t.Fatalf("AdmitAPI(gen %d) = %+v, %v; want Dead and no description", gen, a, err)
		}
	}
	dead(2)
	if a, err := e.store.AdmitAPI(ctx(t), tokenRef(clients.NewClientID(), 1), e.clock.Now); err != nil || a.Outcome != clients.Dead {
		t.Fatalf("AdmitAPI(unknown) = %+v, %v; want Dead", a, err)
	}
	if _, _, err := e.store.RotateSecret(ctx(t), c.ID); err != nil {
		t.Fatal(err)
	}
	dead(1) // tokens of the old secret die at once
	if a, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 2), e.clock.Now); err != nil || a.Outcome != clients.Admitted || a.Decision.Count != 2 {
		t.Fatalf("AdmitAPI at generation 2 = %+v, %v; want admitted, count 2", a, err)
	}
	if _, err := e.store.Revoke(ctx(t), c.ID); err != nil {
		t.Fatal(err)
	}
	dead(2)
	dead(3)
}

func testAdmitAPILimitChanges(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	admit := func(wantOutcome clients.Outcome, wantCount, wantLimit int64) {
		t.Helper()
		a, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 1), e.clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		if a.Outcome != wantOutcome || a.Decision.Count != wantCount || a.Description.RateLimitPerMinute != wantLimit {
			t.Fatalf("AdmitAPI = %+v; want outcome %d, count %d, limit %d", a, wantOutcome, wantCount, wantLimit)
		}
	}
	if _, err := e.store.SetRateLimit(ctx(t), c.ID, 3); err != nil {
		t.Fatal(err)
	}
	admit(clients.Admitted, 1, 3)
	admit(clients.Admitted, 2, 3)
	admit(clients.Admitted, 3, 3)
	admit(clients.Limited, 3, 3)
	// Raised: the next request is admitted, in the same window.
	if _, err := e.store.SetRateLimit(ctx(t), c.ID, 5); err != nil {
		t.Fatal(err)
	}
	admit(clients.Admitted, 4, 5)
	admit(clients.Admitted, 5, 5)
	admit(clients.Limited, 5, 5)
	// Lowered below what the window holds: refused until enough leave it.
	if _, err := e.store.SetRateLimit(ctx(t), c.ID, 2); err != nil {
		t.Fatal(err)
	}
	admit(clients.Limited, 5, 2)
	e.clock.Add(firstWait())
	admit(clients.Admitted, 1, 2)
}

// firstWait is the Wait of a window's first request: it counts until it is
// a window old (package ratelimit), whatever the time within its second.
func firstWait() time.Duration { return clients.Window }

// checkAnyWindow fails the test if more than limit of the (sorted) admitted
// times lie in any half-open interval [s, s+window).
func checkAnyWindow(t *testing.T, admitted []time.Time, limit int64, window time.Duration) {
	t.Helper()
	if !slices.IsSortedFunc(admitted, func(a, b time.Time) int { return a.Compare(b) }) {
		t.Fatal("admitted times are not in order")
	}
	j := 0
	for i := range admitted {
		if j < i {
			j = i
		}
		for j+1 < len(admitted) && admitted[j+1].Sub(admitted[i]) < window {
			j++
		}
		if n := int64(j - i + 1); n > limit {
			t.Fatalf("%d requests admitted in the %v starting at %v (limit %d)", n, window, admitted[i].Format(time.RFC3339Nano), limit)
		}
	}
}

// burstSchedule is 40 requests at each of the offsets: right before and
// right after the moment the previous admitted burst leaves the minute,
// exactly 60 s after it (the first at +60 s, the one at +60.5 s at
// +120.5 s, the one at +121.5 s at +181.5 s, so the one at +182 s is
// admitted and the one at +182.5 s not).
func burstSchedule(t0 time.Time) (times []time.Time, bursts []time.Duration) {
	bursts = []time.Duration{0, 59900 * time.Millisecond, 60500 * time.Millisecond, 120 * time.Second,
		121500 * time.Millisecond, 182 * time.Second, 182500 * time.Millisecond, 300 * time.Second}
	for _, b := range bursts {
		for range 40 {
			times = append(times, t0.Add(b))
		}
	}
	return times, bursts
}

// randomSchedule is n request times, in order, on whole milliseconds: mostly
// bursts and short gaps, sometimes long pauses.
func randomSchedule(t *testing.T, t0 time.Time, n int) []time.Time {
	seed := uint64(time.Now().UnixNano())
	t.Logf("random schedule seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	at := t0
	out := make([]time.Time, n)
	for i := range out {
		switch p := r.IntN(10); {
		case p < 3: // same millisecond
		case p < 8:
			at = at.Add(time.Duration(r.IntN(500)) * time.Millisecond)
		default:
			at = at.Add(time.Duration(r.IntN(20_000)) * time.Millisecond)
		}
		out[i] = at
	}
	return out
}

// replay runs the schedule through admit, compares every decision with the
// reference model and checks the any-window property on what was admitted.
func replay(t *testing.T, e *env, schedule []time.Time, limit int64, admit func(t *testing.T) (clients.Outcome, ratelimit.Decision)) []time.Time {
	t.Helper()
	m := ratelimit.NewModel(limit, clients.Window)
	var admitted []time.Time
	refused := 0
	for i, at := range schedule {
		e.clock.Set(at)
		outcome, got := admit(t)
		want := m.Decide(at)
		wantOutcome := clients.Limited
		if want.Allowed {
			wantOutcome = clients.Admitted
		}
		if outcome != wantOutcome || got != want {
			t.Fatalf("request %d at +%v: %d %+v, want %d %+v", i, at.Sub(schedule[0]), outcome, got, wantOutcome, want)
		}
		if got.Allowed {
			admitted = append(admitted, at)
		} else {
			refused++
		}
	}
	if refused == 0 || len(admitted) == 0 {
		t.Fatalf("schedule did not exercise the limit: %d admitted, %d refused", len(admitted), refused)
	}
	checkAnyWindow(t, admitted, limit, clients.Window)
	return admitted
}

func perBurst(admitted []time.Time, t0 time.Time, bursts []time.Duration) []int {
	out := make([]int, len(bursts))
	for _, a := range admitted {
		out[slices.Index(bursts, a.Sub(t0))]++
	}
	return out
}

func testAdmitAPIAnyWindow(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	const limit = 7
	if _, err := e.store.SetRateLimit(ctx(t), c.ID, limit); err != nil {
		t.Fatal(err)
	}
	admit := func(t *testing.T) (clients.Outcome, ratelimit.Decision) {
		a, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 1), e.clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		return a.Outcome, a.Decision
	}
	t.Run("bursts at the window edge", func(t *testing.T) {
		t0 := e.clock.Now()
		schedule, bursts := burstSchedule(t0)
		admitted := replay(t, e, schedule, limit, admit)
		if got, want := perBurst(admitted, t0, bursts), []int{7, 0, 7, 0, 7, 7, 0, 7}; !slices.Equal(got, want) {
			t.Fatalf("admitted per burst = %v, want %v", got, want)
		}
	})
	t.Run("random", func(t *testing.T) {
		replay(t, e, randomSchedule(t, e.clock.Now().Add(time.Hour), 400), limit, admit)
	})
}

// testAdmitRedisClock runs both admissions on the Redis server's clock (nil
// now), as production does.
func testAdmitRedisClock(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	if _, err := e.store.SetRateLimit(ctx(t), c.ID, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.SetTokenRateLimit(ctx(t), c.ID, 2); err != nil {
		t.Fatal(err)
	}
	for i, want := range []clients.Outcome{clients.Admitted, clients.Admitted, clients.Limited} {
		a, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 1), nil)
		if err != nil || a.Outcome != want {
			t.Fatalf("AdmitAPI #%d on the Redis clock = %+v, %v; want %d", i+1, a, err, want)
		}
		if a.Decision.Wait <= 0 || a.Decision.Wait > clients.Window {
			t.Fatalf("AdmitAPI #%d wait = %v, want within (0, 60s]", i+1, a.Decision.Wait)
		}
		tok, err := e.store.Authenticate(ctx(t), clients.Attempt{ClientID: c.ID, Secret: secret, Address: testAddr, FailureLimit: 60, Token: true})
		if err != nil || (tok.Outcome == clients.Authenticated) != (want == clients.Admitted) {
			t.Fatalf("token request #%d on the Redis clock = %+v, %v; want %d", i+1, tok, err, want)
		}
	}
}

// testRateLogTTL checks that both request logs expire on their own.
func testRateLogTTL(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	if _, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 1), e.clock.Now); err != nil {
		t.Fatal(err)
	}
	e.token(t, c.ID, secret)
	e.token(t, c.ID, "wrong") // a failure log
	logs := 0
	for _, k := range e.keysWith(t, c.ID) {
		if !strings.Contains(k, ":rw:") {
			continue
		}
		logs++
		ttl, err := e.rdb.PTTL(ctx(t), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > clients.Window {
			t.Errorf("request log %s has PTTL %v, want within (0, 60s]", k, ttl)
		}
	}
	if logs != 3 {
		t.Fatalf("found %d request logs for the client, want 3 (API, token, the address's failures)", logs)
	}
}

// testUnknownIDsWriteNothing: requests for ids that are not clients (or no
// longer in good standing) must not make Redis grow.
func testUnknownIDsWriteNothing(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	before := e.keys(t)
	for range 20 {
		id := clients.NewClientID()
		if a, err := e.store.AdmitAPI(ctx(t), tokenRef(id, 1), e.clock.Now); err != nil || a.Outcome != clients.Dead {
			t.Fatalf("AdmitAPI(unknown) = %+v, %v", a, err)
		}
		if a := e.token(t, id, clients.NewSecret()); a.Outcome != clients.BadCredentials || a.Known {
			t.Fatalf("token request of an unknown id = %+v", a)
		}
	}
	for range 5 {
		if _, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 9), e.clock.Now); err != nil {
			t.Fatal(err)
		}

	}
	if after := e.keys(t); !slices.Equal(after, before) {
		t.Fatalf("requests for unknown ids or dead tokens wrote keys: before %v, after %v", before, after)
	}
}

// testHashTags checks that every key has a hash tag, that all keys of one
// client share {client id} (so each script touches one Cluster slot), and
// that organisation and registry keys have their own.
func testHashTags(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	if _, _, err := e.store.RotateSecret(ctx(t), c.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 2), e.clock.Now); err != nil {
		t.Fatal(err)
	}
	e.token(t, c.ID, "wrong")
	clientTag := "{" + c.ID + "}"
	allowed := map[string]bool{clientTag: true, "{org:st-elsewhere}": true, "{registry}": true}
	clientKeys := 0
	for _, k := range e.keys(t) {
		tag := hashTag(k)
		if !allowed[tag] {
			t.Errorf("key %q has hash tag %q, want one of %v", k, tag, allowed)
		}
		if strings.Contains(k, c.ID) && tag != clientTag && tag != "{registry}" {
			t.Errorf("key %q names the client but hashes on %q", k, tag)
		}
		if tag == clientTag {
			clientKeys++
		}
	}
	// Record, audit list, the last change's nonce (kept five minutes), API
	// log, the address's failure log and its failure tags.
	if clientKeys != 6 {
		t.Fatalf("found %d keys tagged %s, want 6: %v", clientKeys, clientTag, e.keys(t))
	}
}

// tokenRef names a token of client id at generation gen. In these tests a
// client's secret id follows its generation: each rotation raises both.
func tokenRef(id string, gen int64) clients.TokenRef {
	return clients.TokenRef{ClientID: id, Generation: gen, SecretID: gen, ID: "jti-of-a-test-token"}
}

// testAdmitAPIDPoPReplay: a DPoP proof's replay mark rides in the one
// round trip (RFC 9449 section 11.1): the first request with a mark is
// admitted and writes it under the client's hash tag for its lifetime; the
// same mark again is Replayed and not counted; a request without a mark
// (a bearer token) writes none; a dead client's request writes none.
func testAdmitAPIDPoPReplay(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	ref := tokenRef(c.ID, 1)
	if a, err := e.store.AdmitAPI(ctx(t), ref, e.clock.Now); err != nil || a.Outcome != clients.Admitted {
		t.Fatalf("bearer AdmitAPI = %+v, %v; want admitted", a, err)
	}
	for _, k := range e.keysWith(t, c.ID) {
		if strings.Contains(k, ":dpop:") {
			t.Fatalf("a bearer request wrote %s", k)
		}
	}
	ref.DPoPReplay, ref.DPoPReplayTTL = "0123456789abcdef0123456789abcdef", 66*time.Second
	a, err := e.store.AdmitAPI(ctx(t), ref, e.clock.Now)
	if err != nil || a.Outcome != clients.Admitted || a.Decision.Count != 2 {
		t.Fatalf("first proof: AdmitAPI = %+v, %v; want admitted, count 2", a, err)
	}
	mark := e.prefix + "{" + c.ID + "}:dpop:0123456789abcdef0123456789abcdef"
	if ttl, err := e.rdb.PTTL(ctx(t), mark).Result(); err != nil || ttl <= 60*time.Second || ttl > 66*time.Second {
		t.Fatalf("replay mark %s PTTL = %v, %v; want within (60s, 66s]", mark, ttl, err)
	}
	if a, err := e.store.AdmitAPI(ctx(t), ref, e.clock.Now); err != nil || a != (clients.APIAdmission{Outcome: clients.Replayed}) {
		t.Fatalf("replayed proof: AdmitAPI = %+v, %v; want Replayed alone", a, err)
	}
	ref.DPoPReplay = ""
	if a, err := e.store.AdmitAPI(ctx(t), ref, e.clock.Now); err != nil || a.Outcome != clients.Admitted || a.Decision.Count != 3 {
		t.Fatalf("after the replay: AdmitAPI = %+v, %v; want admitted, count 3 (the replay not counted)", a, err)
	}
	dead := tokenRef(c.ID, 2)
	dead.DPoPReplay, dead.DPoPReplayTTL = "fedcba9876543210fedcba9876543210", time.Minute
	if a, err := e.store.AdmitAPI(ctx(t), dead, e.clock.Now); err != nil || a.Outcome != clients.Dead {
		t.Fatalf("dead generation: AdmitAPI = %+v, %v; want Dead", a, err)
	}
	if n, err := e.rdb.Exists(ctx(t), e.prefix+"{"+c.ID+"}:dpop:fedcba9876543210fedcba9876543210").Result(); err != nil || n != 0 {
		t.Fatalf("a dead client's proof was marked (%d, %v)", n, err)
	}
}
