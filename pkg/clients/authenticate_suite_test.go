package clients_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// testAddr is the presenting address of the suite's attempts.
const testAddr = "192.0.2.10"

// token makes a token request of id with secret from testAddr, every scope
// asked for implicitly, the failure budget 60.
func (e *env) token(t *testing.T, id, secret string) clients.Authentication {
	t.Helper()
	return e.attempt(t, clients.Attempt{ClientID: id, Secret: secret, Address: testAddr, FailureLimit: 60, Token: true})
}

func (e *env) attempt(t *testing.T, a clients.Attempt) clients.Authentication {
	t.Helper()
	if a.Now == nil {
		a.Now = e.clock.Now
	}
	got, err := e.store.Authenticate(ctx(t), a)
	if err != nil {
		t.Fatalf("Authenticate(%s): %v", a.ClientID, err)
	}
	return got
}

// testAuthenticate: the right secret of an active client authenticates;
// unknown ids, ids of the wrong form, wrong secrets and revoked clients are
// all BadCredentials; a rotation makes the old secret bad at once.
func testAuthenticate(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	other, otherSecret := e.client(t, clients.ClientSpec{OrgSlug: "st-elsewhere", Name: "other", Audience: clients.AudiencePharma,
		Scopes: []string{clients.ScopeEventsSubscribe}})

	a := e.attempt(t, clients.Attempt{ClientID: c.ID, Secret: secret, Address: testAddr, FailureLimit: 60})
	if a.Outcome != clients.Authenticated || !a.Known || !a.Checked || a.Generation != 1 || !slices.Equal(a.Scopes, clients.AllScopes) {
		t.Fatalf("the right secret: %+v, want Authenticated, checked, at generation 1 holding every scope", a)
	}
	bad := []struct {
		name, id, secret string
		known            bool
	}{
		{"another client's secret", c.ID, otherSecret, true},
		{"empty secret", c.ID, "", true},
		{"one character off", c.ID, secret[:len(secret)-1] + flip(secret[len(secret)-1]), true},
		{"prefix only", c.ID, clients.SecretPrefix, true},
		{"trailing space", c.ID, secret + " ", true},
		{"unknown id", clients.NewClientID(), secret, false},
		{"not an id", "not-an-id", secret, false},
		{"empty id", "", "", false},
	}
	for _, tc := range bad {
		for _, token := range []bool{false, true} {
			a := e.attempt(t, clients.Attempt{ClientID: tc.id, Secret: tc.secret, Address: testAddr, FailureLimit: 60, Token: token})
			// Checked unless it repeats a secret already refused (the
			// second round, for a known client).
			if a.Outcome != clients.BadCredentials || a.Known != tc.known || a.Checked == a.Repeated || a.Generation != 0 || a.Scopes != nil {
				t.Errorf("%s (token %v): %+v, want BadCredentials, known %v, checked unless repeated, nothing else", tc.name, token, a, tc.known)
			}
		}
	}

	// A revoked client's right secret is bad; so is a rotated-away one.
	if _, err := e.store.Revoke(ctx(t), other.ID); err != nil {
		t.Fatal(err)
	}
	if a := e.token(t, other.ID, otherSecret); a.Outcome != clients.BadCredentials || !a.Known || a.Repeated || !a.Checked {
		t.Fatalf("revoked client: %+v, want BadCredentials, checked", a)
	}
	if a := e.token(t, other.ID, otherSecret); a.Outcome != clients.BadCredentials || !a.Known || !a.Repeated || a.Checked {
		t.Fatalf("revoked client again: %+v, want BadCredentials, repeated, unchecked", a)
	}
	_, newSecret, err := e.store.RotateSecret(ctx(t), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a := e.token(t, c.ID, secret); a.Outcome != clients.BadCredentials {
		t.Fatalf("rotated-away secret: %+v, want BadCredentials", a)
	}
	if a := e.token(t, c.ID, newSecret); a.Outcome != clients.Authenticated || a.Generation != 2 {
		t.Fatalf("new secret: %+v, want Authenticated at generation 2", a)
	}
}

// testAuthenticateScope: scope narrowing happens after the secret is
// checked (a wrong secret never learns what a client holds), in the
// catalogue's order.
func testAuthenticateScope(t *testing.T, e *env) {
	e.org(t, "acme", clients.EnvironmentLive)
	c, secret := e.client(t, clients.ClientSpec{OrgSlug: "acme", Name: "pharma", Audience: clients.AudiencePharma,
		Scopes: []string{clients.ScopeEventsSubscribe, clients.ScopeProgrammeMetricsRead}})
	tests := []struct {
		name    string
		scope   []string
		bad     bool
		secret  string
		outcome clients.AuthOutcome
		granted []string
	}{
		{"omitted: every scope held", nil, false, secret, clients.Authenticated, []string{clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe}},
		{"narrowed", []string{clients.ScopeEventsSubscribe}, false, secret, clients.Authenticated, []string{clients.ScopeEventsSubscribe}},
		{"reordered", []string{clients.ScopeEventsSubscribe, clients.ScopeProgrammeMetricsRead}, false, secret, clients.Authenticated,
			[]string{clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe}},
		{"empty list: none", []string{}, false, secret, clients.Authenticated, []string{}},
		{"not held", []string{clients.ScopePatientsRead}, false, secret, clients.InvalidScope, nil},
		{"not a scope", []string{"admin"}, false, secret, clients.InvalidScope, nil},
		{"malformed", nil, true, secret, clients.InvalidScope, nil},
		{"not held, wrong secret", []string{clients.ScopePatientsRead}, false, "wrong", clients.BadCredentials, nil},
		{"malformed, wrong secret", nil, true, "wrong", clients.BadCredentials, nil},
	}
	for _, tc := range tests {
		a := e.attempt(t, clients.Attempt{ClientID: c.ID, Secret: tc.secret, Address: testAddr, FailureLimit: 60, Token: true,
			Scope: tc.scope, BadScope: tc.bad})
		if a.Outcome != tc.outcome || (tc.outcome == clients.Authenticated && !slices.Equal(a.Scopes, tc.granted)) {
			t.Errorf("%s: %+v, want outcome %d granting %v", tc.name, a, tc.outcome, tc.granted)
		}
	}
	// Neither refusal was counted against the token limit: 30 remain, of
	// which the four grants above used four.
	for i := range 26 {
		if a := e.token(t, c.ID, secret); a.Outcome != clients.Authenticated {
			t.Fatalf("request %d: %+v", i+5, a)
		}
	}
	if a := e.token(t, c.ID, secret); a.Outcome != clients.TokenLimited {
		t.Fatalf("31st request: %+v, want TokenLimited", a)
	}
}

// testTokenLimit: 30 token requests per minute by default, exact Retry-After,
// the client's own limit applying at once, separate from the API limit.
func testTokenLimit(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	t0 := e.clock.Now()
	for i := range 30 {
		a := e.token(t, c.ID, secret)
		if a.Outcome != clients.Authenticated || !a.Decision.Allowed || a.Decision.Count != int64(i+1) || a.Limit != 30 {
			t.Fatalf("request %d: %+v, want authenticated with count %d of 30", i+1, a, i+1)
		}
	}
	tests := []struct {
		at         time.Duration // after t0
		outcome    clients.AuthOutcome
		count      int64
		wait       time.Duration
		retryAfter int64
	}{
		// The first 30 (at .535 s) count until they are a minute old: until
		// +60 s, never later than a minute after a refusal.
		{0, clients.TokenLimited, 30, time.Minute, 60},
		{10500 * time.Millisecond, clients.TokenLimited, 30, 49500 * time.Millisecond, 50},
		{59 * time.Second, clients.TokenLimited, 30, time.Second, 1},
		{59999 * time.Millisecond, clients.TokenLimited, 30, time.Millisecond, 1},
		{time.Minute, clients.Authenticated, 1, time.Minute, 60},
	}
	for _, tc := range tests {
		e.clock.Set(t0.Add(tc.at))
		a := e.token(t, c.ID, secret)
		if a.Outcome != tc.outcome || a.Decision.Count != tc.count || a.Decision.Wait != tc.wait ||
			a.Decision.RetryAfterSeconds() != tc.retryAfter || a.Decision.Allowed != (tc.outcome == clients.Authenticated) {
			t.Errorf("at +%v: %+v (Retry-After %d), want outcome %d count %d wait %v Retry-After %d",
				tc.at, a, a.Decision.RetryAfterSeconds(), tc.outcome, tc.count, tc.wait, tc.retryAfter)
		}
	}
	if _, err := e.store.SetTokenRateLimit(ctx(t), c.ID, 2); err != nil {
		t.Fatal(err)
	}
	e.clock.Set(t0.Add(10 * time.Minute))
	for i, want := range []clients.AuthOutcome{clients.Authenticated, clients.Authenticated, clients.TokenLimited} {
		if a := e.token(t, c.ID, secret); a.Outcome != want || a.Limit != 2 {
			t.Fatalf("with limit 2, request %d = %+v; want outcome %d", i+1, a, want)
		}
	}
	// Failed attempts do not use the token budget; the API log is apart.
	e.clock.Set(t0.Add(20 * time.Minute))
	for range 10 {
		e.token(t, c.ID, "wrong")
	}
	for i := range 2 {
		if a := e.token(t, c.ID, secret); a.Outcome != clients.Authenticated {
			t.Fatalf("after failures, request %d = %+v", i+1, a)
		}
	}
	api, err := e.store.AdmitAPI(ctx(t), tokenRef(c.ID, 1), e.clock.Now)
	if err != nil || api.Outcome != clients.Admitted || api.Decision.Count != 1 {
		t.Fatalf("AdmitAPI after the token limit was reached = %+v, %v; want admitted, count 1", api, err)
	}
}

// testTokenLimitAnyWindow replays bursts at the window's edges and random
// arrivals: never more than 30 granted in any 60 s.
func testTokenLimitAnyWindow(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	admit := func(t *testing.T) (clients.Outcome, ratelimit.Decision) {
		a := e.token(t, c.ID, secret)
		if a.Outcome == clients.Authenticated {
			return clients.Admitted, a.Decision
		}
		return clients.Limited, a.Decision
	}
	t.Run("bursts at the window edge", func(t *testing.T) {
		t0 := e.clock.Now()
		schedule, bursts := burstSchedule(t0)
		admitted := replay(t, e, schedule, 30, admit)
		if got, want := perBurst(admitted, t0, bursts), []int{30, 0, 30, 0, 30, 30, 0, 30}; !slices.Equal(got, want) {
			t.Fatalf("admitted per burst = %v, want %v", got, want)
		}
	})
	t.Run("random", func(t *testing.T) {
		replay(t, e, randomSchedule(t, e.clock.Now().Add(time.Hour), 500), 30, admit)
	})
}

// testFailureBudget: an address that keeps presenting new wrong secrets for
// one client is refused, unchecked, after the budget of distinct guesses;
// the budget is per address and per client, so the same client from another
// address, another client from the same address, and unknown ids are
// unaffected; the right secret from the guessing address is refused too
// once the budget is spent (it is that address's budget for that client:
// telling a guesser when it guessed right is what the budget prevents),
// and admitted again when it frees up. A guess already refused is answered
// as wrong again without spending the budget.
func testFailureBudget(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	neighbour, neighbourSecret := e.client(t, clients.ClientSpec{OrgSlug: "st-elsewhere", Name: "neighbour", Audience: clients.AudienceHospital})
	const limit = 5
	var checked int64 // attempts whose secret was compared (Authentication.Checked)
	try := func(id, secret, addr string) clients.Authentication {
		t.Helper()
		a := e.attempt(t, clients.Attempt{ClientID: id, Secret: secret, Address: addr, FailureLimit: limit, Token: true})
		if a.Checked {
			checked++
		}
		return a
	}
	t0 := e.clock.Now()
	for i := range limit {
		if a := try(c.ID, fmt.Sprintf("guess-%d", i), testAddr); a.Outcome != clients.BadCredentials || a.Repeated {
			t.Fatalf("failure %d: %+v, want BadCredentials, compared", i+1, a)
		}
		e.clock.Add(time.Second)
	}
	for i := range 20 {
		a := try(c.ID, fmt.Sprintf("guess-%d", limit+i), testAddr)
		if a.Outcome != clients.TooManyFailures || a.Repeated {
			t.Fatalf("past the budget: %+v, want TooManyFailures", a)
		}
		// The oldest failure, at t0, frees a slot when it is a minute
		// old.
		if want := t0.Add(firstWait()).Sub(e.clock.Now()); a.Decision.Wait != want {
			t.Fatalf("TooManyFailures wait = %v, want %v", a.Decision.Wait, want)
		}
	}
	if n := checked; n != limit {
		t.Fatalf("%d secrets checked for %d failures and 20 refusals, want %d: refusals are not checked", n, limit, limit)
	}
	if a := try(c.ID, secret, testAddr); a.Outcome != clients.TooManyFailures {
		t.Fatalf("right secret from the guessing address: %+v, want TooManyFailures", a)
	}
	if a := try(c.ID, "guess-0", testAddr); a.Outcome != clients.BadCredentials || !a.Repeated {
		t.Fatalf("a guess already refused, again: %+v, want BadCredentials, repeated", a)
	}
	if n := checked; n != limit {
		t.Fatalf("%d secrets checked, want still %d", n, limit)
	}
	if a := try(c.ID, secret, "198.51.100.7"); a.Outcome != clients.Authenticated {
		t.Fatalf("same client from another address: %+v", a)
	}
	if a := try(neighbour.ID, neighbourSecret, testAddr); a.Outcome != clients.Authenticated {
		t.Fatalf("another client from the guessing address: %+v", a)
	}
	if a := try(clients.NewClientID(), "x", testAddr); a.Outcome != clients.BadCredentials {
		t.Fatalf("unknown id from the guessing address: %+v", a)
	}
	e.clock.Set(t0.Add(firstWait()))
	if a := try(c.ID, secret, testAddr); a.Outcome != clients.Authenticated {
		t.Fatalf("right secret once a slot is free: %+v", a)
	}
}

// testStaleSecretNoLockout is the lockout of issue 21: behind one address,
// a stale instance keeps sending the rotated-out secret at 20 requests a
// second while a sibling instance of the same client asks for a token
// every 500 ms with the right secret, for three minutes: every one of the
// sibling's requests is authenticated, the stale secret is compared about
// again only once its failure has left the failure log and
// otherwise answered as wrong unchecked, and its repeats are slowed down
// past their own limit. A guesser at the same address still gets exactly
// the budget of distinct secrets checked, stale instance or not.
func testStaleSecretNoLockout(t *testing.T, e *env) {
	c, old := e.hospital(t)
	if _, err := e.store.SetTokenRateLimit(ctx(t), c.ID, 1000); err != nil {
		t.Fatal(err)
	}
	_, secret, err := e.store.RotateSecret(ctx(t), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	const limit, repeats = 60, 600
	var checked int64 // attempts whose secret was compared (Authentication.Checked)
	try := func(secret string) clients.Authentication {
		t.Helper()
		a := e.attempt(t, clients.Attempt{ClientID: c.ID, Secret: secret, Address: testAddr, FailureLimit: limit,
			RepeatLimit: repeats, Token: true})
		if a.Checked {
			checked++
		}
		return a
	}
	stale := map[string]int{}
	ok, n := 0, 0
	for i := range 3 * 60 * 20 { // 20 a second for three minutes
		switch a := try(old); {
		case a.Outcome == clients.BadCredentials && !a.Repeated:
			stale["401 compared"]++
		case a.Outcome == clients.BadCredentials:
			stale["401 repeat"]++
		case a.Outcome == clients.TooManyFailures && a.Repeated && a.Decision.Wait > 0 && a.Decision.Wait <= clients.Window+time.Second &&
			a.Decision.Count == repeats:
			stale["429 repeat"]++
		default:
			t.Fatalf("stale secret at %d: %+v", i, a)
		}
		if i%10 == 0 {
			n++
			if a := try(secret); a.Outcome == clients.Authenticated {
				ok++
			} else {
				t.Errorf("right secret at +%v: %+v, want Authenticated", time.Duration(i)*50*time.Millisecond, a)
			}
		}
		e.clock.Add(50 * time.Millisecond)
	}
	t.Logf("stale secret 20/s for 3 min: %v; right secret %d of %d authenticated; %d secrets compared", stale, ok, n, checked)
	// Compared once at the start and again each time its failure had left
	// the log (a minute later).
	if stale["401 compared"] != 3 || stale["429 repeat"] == 0 || ok != n {
		t.Errorf("stale: %v, right secret %d of %d; want 3 compared, repeats slowed, every right one authenticated", stale, ok, n)
	}
	// Per minute, at most the repeat limit answered 401 as repeats.
	if perMinute := stale["401 repeat"] / 3; perMinute > repeats {
		t.Errorf("%d repeats a minute answered 401, want at most %d", perMinute, repeats)
	}
	// A guesser at the same address, the stale instance still at it.
	guessed := 0
	for i := range 200 {
		if a := try(fmt.Sprintf("guess-%d", i)); a.Outcome == clients.BadCredentials && !a.Repeated {
			guessed++
		}
		try(old)
	}
	// The stale secret holds one slot of the budget, no more.
	if guessed != limit-1 {
		t.Errorf("%d distinct guesses checked within a minute, want %d (the stale secret holds one slot)", guessed, limit-1)
	}
	tags, err := e.rdb.HLen(ctx(t), e.keysWith(t, ":fail:tags:")[0]).Result()
	if err != nil || tags > limit {
		t.Errorf("the address holds %d failure tags (%v), want at most the limit %d", tags, err, limit)
	}
}

// testFailureTagsBounded: a guesser that keeps at the budget for ten
// minutes (one new secret a second, the most the budget lets it check)
// never makes the address's failure tags outgrow the limit, never gets more
// than the limit checked in any minute, and repeats of its old guesses are
// still known as wrong while their tags last.
func testFailureTagsBounded(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	const limit = 5
	var checkedAt []time.Time
	for i := range 600 {
		a := e.attempt(t, clients.Attempt{ClientID: c.ID, Secret: fmt.Sprintf("guess-%d", i), Address: testAddr, FailureLimit: limit, Token: true})
		if a.Checked {
			checkedAt = append(checkedAt, e.clock.Now())
			if a.Outcome != clients.BadCredentials {
				t.Fatalf("guess %d checked: %+v", i, a)
			}
		}
		if i%50 == 0 {
			key := e.keysWith(t, ":fail:tags:")
			if n, err := e.rdb.HLen(ctx(t), key[0]).Result(); err != nil || n > limit {
				t.Fatalf("after %d guesses the failure tags hold %d entries (%v), want at most %d", i+1, n, err, limit)
			}
			ttl, err := e.rdb.PTTL(ctx(t), key[0]).Result()
			if err != nil || ttl <= 0 || ttl > clients.Window+time.Second {
				t.Fatalf("failure tags PTTL %v (%v), want within (0, 61s]", ttl, err)
			}
		}
		e.clock.Add(time.Second)
	}
	checkAnyWindow(t, checkedAt, limit, clients.Window)
	if len(checkedAt) < 40 {
		t.Errorf("%d guesses checked in ten minutes, want about 50 (5 a minute)", len(checkedAt))
	}
	last := fmt.Sprintf("guess-%d", 599)
	a := e.attempt(t, clients.Attempt{ClientID: c.ID, Secret: last, Address: testAddr, FailureLimit: limit, Token: true})
	if a.Outcome == clients.Authenticated {
		t.Fatalf("a guess repeated: %+v", a)
	}
}
