package tokenserver

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

func grant() string { return form("grant_type", "client_credentials") }

// TestTokenRateLimit (point 6): the 31st token request within 60 seconds is
// 429 slow_down with Retry-After until the oldest request leaves the window;
// two instances on one Redis share the count; the log expires.
func TestTokenRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other, _ := e.start(e.keys) // a second replica on the same Redis and prefix
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	t0 := epoch

	// 30 requests in the first 2.9 seconds, alternating replicas.
	for i := range 30 {
		e.rate.Set(t0.Add(time.Duration(i) * 100 * time.Millisecond))
		base := e.url
		if i%2 == 1 {
			base = other
		}
		tokenReply(t, post(t, base+PathToken, formType, grant(), basic(id, secret)), "events.subscribe")
	}
	// The 31st at 20.5 s, on either replica: the first second's ten count
	// until the newest of them (at 0.9 s) is a minute old, at 60.9 s
	// (package ratelimit counts one-second buckets, never too few):
	// Retry-After is 40.4 s rounded up.
	e.rate.Set(t0.Add(20500 * time.Millisecond))
	for _, base := range []string{e.url, other} {
		r := post(t, base+PathToken, formType, grant(), basic(id, secret))
		wantStatus(t, r, http.StatusTooManyRequests)
		wantHeaders(t, r, oauthHeaders(map[string]string{"Retry-After": "41", "WWW-Authenticate": ""}))
		wantJSON(t, r, bodySlowDown)
	}
	// Form credentials are limited alike.
	r := post(t, other+PathToken, formType, form("grant_type", "client_credentials", "client_id", id, "client_secret", secret))
	wantStatus(t, r, http.StatusTooManyRequests)

	// The refusals were not counted: 1 ms before 60.9 s still refused;
	// at 60.9 s, 41 s after the first refusal, the first second's ten
	// have left and ten requests are admitted; the next must wait for the
	// second second's bucket, 1 s away.
	e.rate.Set(t0.Add(60899 * time.Millisecond))
	r = post(t, e.url+PathToken, formType, grant(), basic(id, secret))
	wantStatus(t, r, http.StatusTooManyRequests)
	wantHeaders(t, r, map[string]string{"Retry-After": "1"})
	e.rate.Set(t0.Add(60900 * time.Millisecond))
	for range 10 {
		tokenReply(t, post(t, other+PathToken, formType, grant(), basic(id, secret)), "events.subscribe")
	}
	r = post(t, e.url+PathToken, formType, grant(), basic(id, secret))
	wantStatus(t, r, http.StatusTooManyRequests)
	wantHeaders(t, r, map[string]string{"Retry-After": "1"})

	// The limit is per client: another client is unaffected.
	id2, secret2 := e.client(clients.AudiencePharma)
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id2, secret2)), "")

	// A raised limit applies from the next request.
	if _, err := e.store.SetTokenRateLimit(context.Background(), id, 31); err != nil {
		t.Fatal(err)
	}
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id, secret)), "events.subscribe")

	// The token count expires (its key is "{client_id}:rw:token" under the
	// prefix).
	ttl, err := e.rdb.PTTL(context.Background(), e.prefix+"{"+id+"}:rw:token").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > time.Minute {
		t.Errorf("token count TTL %v, want within (0, 60s]", ttl)
	}
}

// TestTokenRateLimitAnyWindow (point 6) replays a pseudo-random schedule of
// token requests across two replicas with the injected clock and checks
// every answer against package ratelimit's reference model (one-second
// buckets, each counted until its newest token is a minute old), that every
// refusal came with a full window, that Retry-After is the model's wait (at
// most 60) and that no 60-second window ever saw more than 30 tokens.
func TestTokenRateLimitAnyWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other, _ := e.start(e.keys)
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	rng := rand.New(rand.NewPCG(2030, 6))
	const limit = 30
	var issued []time.Time
	m := ratelimit.NewModel(limit, time.Minute)
	now := epoch
	refused := 0
	for i := range 220 {
		// Bursts and pauses: mostly 0-1.5 s apart, sometimes 20 s.
		step := time.Duration(rng.IntN(1500)) * time.Millisecond
		if rng.IntN(25) == 0 {
			step = 20 * time.Second
		}
		now = now.Add(step)
		e.rate.Set(now)
		base := e.url
		if rng.IntN(2) == 1 {
			base = other
		}
		// Tokens counted: those of a second whose newest token is less
		// than a minute old.
		newest := map[time.Time]time.Time{}
		for _, at := range issued {
			newest[at.Truncate(time.Second)] = at
		}
		var inWindow []time.Time
		for _, at := range issued {
			if newest[at.Truncate(time.Second)].After(now.Add(-time.Minute)) {
				inWindow = append(inWindow, at)
			}
		}
		want := m.Decide(now)
		r := post(t, base+PathToken, formType, grant(), basic(id, secret))
		switch r.Status {
		case http.StatusOK:
			if !want.Allowed || len(inWindow) >= limit {
				t.Fatalf("request %d at %v: issued with %d tokens already in the window (model: %+v)", i, now.Sub(epoch), len(inWindow), want)
			}
			issued = append(issued, now)
		case http.StatusTooManyRequests:
			refused++
			if want.Allowed || len(inWindow) < limit {
				t.Fatalf("request %d at %v: refused with only %d tokens in the window (model: %+v)", i, now.Sub(epoch), len(inWindow), want)
			}
			if got, ra := r.Header.Get("Retry-After"), strconv.FormatInt(want.RetryAfterSeconds(), 10); got != ra || want.Wait > time.Minute {
				t.Fatalf("request %d: Retry-After %s, want %s (at most 60)", i, got, ra)
			}
		default:
			t.Fatalf("request %d: status %d: %s", i, r.Status, r.Body)
		}
	}
	// Never more than 30 in any 60-second window [a, a+60s).
	for i, a := range issued {
		n := 0
		for _, b := range issued[i:] {
			if b.Before(a.Add(time.Minute)) {
				n++
			}
		}
		if n > limit {
			t.Fatalf("%d tokens in the minute from %v", n, a.Sub(epoch))
		}
	}
	t.Logf("%d tokens issued, %d refused over %v", len(issued), refused, now.Sub(epoch))
	if refused == 0 || len(issued) <= 2*limit {
		t.Fatalf("schedule too gentle to test the limit: %d issued, %d refused", len(issued), refused)
	}
}

// TestFailureLimitPerAddress: after FailuresPerMinute invalid_client
// answers from one address, its next requests are 429 slow_down, even with
// good credentials, until the window lets it in again; other addresses are
// unaffected; replicas share the count.
func TestFailureLimitPerAddress(t *testing.T) {
	t.Parallel()
	const n = 3
	e := newEnv(t, withTrust("127.0.0.1/32"), withFailures(n))
	other, _ := e.start(e.keys)
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	from := func(addr string) func(*http.Request) { return header("X-Forwarded-For", addr) }
	const attacker, bystander = "203.0.113.7", "198.51.100.9"

	for range n {
		r := post(t, e.url+PathToken, formType, grant(), basic(id, clients.NewSecret()), from(attacker))
		wantStatus(t, r, http.StatusUnauthorized)
		wantJSON(t, r, bodyInvalidClient)
	}
	blocked := func(r reply, retryAfter string) {
		t.Helper()
		wantStatus(t, r, http.StatusTooManyRequests)
		wantHeaders(t, r, oauthHeaders(map[string]string{"Retry-After": retryAfter}))
		wantJSON(t, r, bodyBlocked)
	}
	// Good credentials from that address: refused without being checked,
	// on both endpoints.
	before := e.checked()
	blocked(post(t, e.url+PathToken, formType, grant(), basic(id, secret), from(attacker)), "60")
	blocked(post(t, e.url+PathIntrospect, formType, form("token", "x"), basic(id, secret), from(attacker)), "60")
	if d := e.checked() - before; d != 0 {
		t.Errorf("%d secrets of a blocked address were checked", d)
	}
	// Other addresses are unaffected.
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id, secret), from(bystander)), "events.subscribe")
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id, secret)), "events.subscribe")
	// Retry-After counts down with the clock...
	e.rate.Add(20500 * time.Millisecond)
	blocked(post(t, e.url+PathToken, formType, grant(), basic(id, secret), from(attacker)), "40")
	e.rate.Set(epoch.Add(time.Minute - time.Millisecond))
	blocked(post(t, e.url+PathToken, formType, grant(), basic(id, secret), from(attacker)), "1")
	// ...and when the failures are a minute old, 60 s after the first
	// refusal, the address is served.
	e.rate.Set(epoch.Add(time.Minute))
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id, secret), from(attacker)), "events.subscribe")

	// Replicas share the count: two failures on one and one on the other
	// block the address on the other.
	const spread = "203.0.113.8"
	for _, base := range []string{e.url, e.url, other} {
		wantStatus(t, post(t, base+PathToken, formType, grant(), basic(id, clients.NewSecret()), from(spread)), http.StatusUnauthorized)
	}
	blocked(post(t, other+PathToken, formType, grant(), basic(id, secret), from(spread)), "60")

	// Failed introspection callers count too.
	const prober = "203.0.113.9"
	for range n {
		wantStatus(t, post(t, e.url+PathIntrospect, formType, form("token", "x"), basic(id, clients.NewSecret()), from(prober)), http.StatusUnauthorized)
	}
	blocked(post(t, e.url+PathToken, formType, grant(), basic(id, secret), from(prober)), "60")
}

// TestFailuresNeverLockOutANeighbour: behind one address (a hospital's
// NAT), a stale integration keeps sending a rotated secret; its client is
// refused once its budget is spent, but a neighbour's client from the same
// address gets every token it asks for, on both replicas. A storm of
// unknown ids from that address meets the address's ceiling, and still the
// neighbour's valid credentials pass.
func TestFailuresNeverLockOutANeighbour(t *testing.T) {
	t.Parallel()
	const budget, ceiling = 3, 5
	e := newEnv(t, withTrust("127.0.0.1/32"), withFailures(budget), withCeiling(ceiling))
	other, _ := e.start(e.keys)
	stale, _ := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	neighbour, neighbourSecret := e.client(clients.AudienceHospital, clients.ScopeEventsSubscribe)
	if _, err := e.store.SetTokenRateLimit(t.Context(), neighbour, 1000); err != nil {
		t.Fatal(err)
	}
	nat := header("X-Forwarded-For", "203.0.113.50")

	issued := 0
	for i := range 40 {
		base := []string{e.url, other}[i%2]
		r := post(t, base+PathToken, formType, grant(), basic(stale, clients.NewSecret()), nat)
		if i < budget {
			wantStatus(t, r, http.StatusUnauthorized)
			wantJSON(t, r, bodyInvalidClient)
		} else {
			wantStatus(t, r, http.StatusTooManyRequests)
			wantJSON(t, r, bodyBlocked)
		}
		tokenReply(t, post(t, base+PathToken, formType, grant(), basic(neighbour, neighbourSecret), nat), "events.subscribe")
		issued++
		e.rate.Add(time.Second)
	}
	if issued != 40 {
		t.Fatalf("the neighbour got %d of 40 tokens", issued)
	}

	// Unknown ids from the same address, a minute on (the stale client's
	// failures have left the ceiling's window): invalid_client up to the
	// ceiling, then slow_down; the neighbour is still served.
	e.rate.Add(time.Minute)
	for i := range ceiling + 3 {
		r := post(t, e.url+PathToken, formType, grant(), basic(clients.NewClientID(), "svc_cs_x"), nat)
		if i < ceiling {
			wantStatus(t, r, http.StatusUnauthorized)
			wantJSON(t, r, bodyInvalidClient)
			continue
		}
		wantStatus(t, r, http.StatusTooManyRequests)
		wantJSON(t, r, bodyBlocked)
		if ra := r.Header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Errorf("ceiling's 429 Retry-After = %q", ra)
		}
	}
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(neighbour, neighbourSecret), nat), "events.subscribe")
	// Malformed requests count against the ceiling too.
	r := post(t, e.url+PathToken, formType, "grant_type=client_credentials&grant_type=x", basic(neighbour, neighbourSecret), nat)
	wantStatus(t, r, http.StatusTooManyRequests)
}

// TestFailureLimitIgnoresUntrustedForwarding: without a trusted proxy,
// X-Forwarded-For is the client's own claim and changes nothing.
func TestFailureLimitIgnoresUntrustedForwarding(t *testing.T) {
	t.Parallel()
	const n = 2
	e := newEnv(t, withFailures(n))
	id, secret := e.client(clients.AudiencePharma)
	for i := range n {
		r := post(t, e.url+PathToken, formType, grant(), basic(id, clients.NewSecret()), header("X-Forwarded-For", "192.0.2."+strconv.Itoa(i+1)))
		wantStatus(t, r, http.StatusUnauthorized)
	}
	r := post(t, e.url+PathToken, formType, grant(), basic(id, secret), header("X-Forwarded-For", "192.0.2.200"))
	wantStatus(t, r, http.StatusTooManyRequests)
	wantJSON(t, r, bodyBlocked)
}
