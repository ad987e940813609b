package clients_test

import (
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
	if a.Outcome != clients.Authenticated || !a.Known || a.Generation != 1 || !slices.Equal(a.Scopes, clients.AllScopes) {
		t.Fatalf("the right secret: %+v, want Authenticated at generation 1 holding every scope", a)
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
			if a.Outcome != clients.BadCredentials || a.Known != tc.known || a.Generation != 0 || a.Scopes != nil {
				t.Errorf("%s (token %v): %+v, want BadCredentials, known %v, nothing else", tc.name, token, a, tc.known)
			}
		}
	}

	// A revoked client's right secret is bad; so is a rotated-away one.
	if _, err := e.store.Revoke(ctx(t), other.ID); err != nil {
		t.Fatal(err)
	}
	if a := e.token(t, other.ID, otherSecret); a.Outcome != clients.BadCredentials || !a.Known {
		t.Fatalf("revoked client: %+v, want BadCredentials", a)
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
		// The first 30 (at .535 s) count until their second has left the
		// minute: until +60.464 s.
		{0, clients.TokenLimited, 30, 60464 * time.Millisecond, 61},
		{10500 * time.Millisecond, clients.TokenLimited, 30, 49964 * time.Millisecond, 50},
		{59 * time.Second, clients.TokenLimited, 30, 1464 * time.Millisecond, 2},
		{time.Minute, clients.TokenLimited, 30, 464 * time.Millisecond, 1},
		{60463 * time.Millisecond, clients.TokenLimited, 30, time.Millisecond, 1},
		{60464 * time.Millisecond, clients.Authenticated, 1, time.Minute, 60},
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
	api, err := e.store.AdmitAPI(ctx(t), c.ID, 1, e.clock.Now)
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
		if got, want := perBurst(admitted, t0, bursts), []int{30, 0, 30, 0, 30, 0, 30, 30}; !slices.Equal(got, want) {
			t.Fatalf("admitted per burst = %v, want %v", got, want)
		}
	})
	t.Run("random", func(t *testing.T) {
		replay(t, e, randomSchedule(t, e.clock.Now().Add(time.Hour), 500), 30, admit)
	})
}

// testFailureBudget: an address that keeps failing for one client is
// refused, unchecked, after the budget; the budget is per address and per
// client, so the same client from another address, another client from the
// same address, and unknown ids are unaffected; the right secret from the
// failing address is refused too once the budget is spent (it is that
// address's budget for that client), and admitted again when it frees up.
func testFailureBudget(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	neighbour, neighbourSecret := e.client(t, clients.ClientSpec{OrgSlug: "st-elsewhere", Name: "neighbour", Audience: clients.AudienceHospital})
	const limit = 5
	try := func(id, secret, addr string) clients.Authentication {
		t.Helper()
		return e.attempt(t, clients.Attempt{ClientID: id, Secret: secret, Address: addr, FailureLimit: limit, Token: true})
	}
	t0 := e.clock.Now()
	before := e.store.DigestChecks()
	for i := range limit {
		if a := try(c.ID, "stale", testAddr); a.Outcome != clients.BadCredentials {
			t.Fatalf("failure %d: %+v", i+1, a)
		}
		e.clock.Add(time.Second)
	}
	for range 20 {
		a := try(c.ID, "stale", testAddr)
		if a.Outcome != clients.TooManyFailures {
			t.Fatalf("past the budget: %+v, want TooManyFailures", a)
		}
		// The oldest failure, at t0, frees a slot when its second has
		// left the minute.
		if want := t0.Add(firstWait(t0)).Sub(e.clock.Now()); a.Decision.Wait != want {
			t.Fatalf("TooManyFailures wait = %v, want %v", a.Decision.Wait, want)
		}
	}
	if n := e.store.DigestChecks() - before; n != limit {
		t.Fatalf("%d secrets checked for %d failures and 20 refusals, want %d: refusals are not checked", n, limit, limit)
	}
	if a := try(c.ID, secret, testAddr); a.Outcome != clients.TooManyFailures {
		t.Fatalf("right secret from the failing address: %+v, want TooManyFailures", a)
	}
	if a := try(c.ID, secret, "198.51.100.7"); a.Outcome != clients.Authenticated {
		t.Fatalf("same client from another address: %+v", a)
	}
	if a := try(neighbour.ID, neighbourSecret, testAddr); a.Outcome != clients.Authenticated {
		t.Fatalf("another client from the failing address: %+v", a)
	}
	if a := try(clients.NewClientID(), "x", testAddr); a.Outcome != clients.BadCredentials {
		t.Fatalf("unknown id from the failing address: %+v", a)
	}
	e.clock.Set(t0.Add(firstWait(t0)))
	if a := try(c.ID, secret, testAddr); a.Outcome != clients.Authenticated {
		t.Fatalf("right secret once a slot is free: %+v", a)
	}
}
