package tokenserver

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// TestCeilingWindowModel: the per-address ceiling decides every failure as
// package ratelimit's window does (ratelimit.Model, the reference its
// promise is proved on): the same admissions and, on a refusal, the same
// wait, over random runs at every limit from 1 to 12, times stepping from
// a millisecond to 70 s and sometimes back.
func TestCeilingWindowModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(59, 11))
	for limit := int64(1); limit <= 12; limit++ {
		for run := range 20 {
			w, m := &ceilingWindow{}, ratelimit.NewModel(limit, time.Minute)
			now := epoch.UnixMilli()
			for i := range 400 {
				switch r := rng.IntN(100); {
				case r < 60:
					now += rng.Int64N(2000)
				case r < 90:
					now += rng.Int64N(15_000)
				case r < 97:
					now += rng.Int64N(70_000)
				default:
					now -= rng.Int64N(3000) // an earlier reading counts as the latest
				}
				want := m.DecideMS(now)
				wait, over := w.take(now, limit)
				if over == want.Allowed || (over && wait != want.Wait) {
					t.Fatalf("limit %d, run %d, failure %d at %d: ceiling over=%v wait=%v; model %+v", limit, run, i, now, over, wait, want)
				}
				if spent := w.spent(now, limit); spent != (m.Counted(now) >= limit) {
					t.Fatalf("limit %d, run %d, failure %d: spent %v, model counts %d", limit, run, i, spent, m.Counted(now))
				}
			}
		}
	}
}

// TestCeilingExactPerMinute (issue 59, hole 11): the ceiling admits its
// figure in any minute, never twice it. A token bucket of 600 refilled at
// 10 a second admitted 1,209 failures in 61 s; the window admits 600 in
// the first 30 s and then nothing until a minute after them, as they leave
// (60 one-second buckets: a bucket leaves a minute after its newest
// failure).
func TestCeilingExactPerMinute(t *testing.T) {
	clk := newClock(epoch)
	c, err := newAddressCeiling(DefaultAddressFailuresPerMinute, clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	const addr = "198.51.100.7"
	admitted := 0
	var times []time.Time
	// Two failures every 100 ms for 61 s.
	for range 610 {
		for range 2 {
			if _, over := c.take(addr); !over {
				admitted++
				times = append(times, clk.Now())
			}
		}
		clk.Add(100 * time.Millisecond)
	}
	for i := range times {
		j := i
		for j < len(times) && times[j].Sub(times[i]) < time.Minute {
			j++
		}
		if j-i > DefaultAddressFailuresPerMinute {
			t.Fatalf("%d failures admitted within a minute from %v", j-i, times[i].Sub(epoch))
		}
	}
	// 600 in the first 30 s (the 600th at 29.9 s), then none until the
	// first second's bucket leaves, a minute after its newest failure
	// (0.9 s): at 60.9 s, the run's last step, two more.
	if admitted != DefaultAddressFailuresPerMinute+2 {
		t.Errorf("admitted %d in 61 s, want 602", admitted)
	}
	// Refused with the wait until the oldest bucket leaves.
	clk.Set(epoch.Add(2 * time.Hour))
	for range DefaultAddressFailuresPerMinute {
		if _, over := c.take(addr); over {
			t.Fatal("a fresh minute's failure refused")
		}
	}
	clk.Add(10 * time.Second)
	wait, over := c.take(addr)
	if !over || wait != 50*time.Second {
		t.Errorf("the 601st failure 10 s after the 600th: over %v, wait %v; want refused for 50 s", over, wait)
	}
	if !c.spent(addr) || c.spent("198.51.100.8") {
		t.Error("spent: wrong address state")
	}
}

// TestProofDeferredWhileCeilingSpent (issue 59, hole 6): once an address's
// ceiling is spent, a token request's DPoP proof is verified only after
// the secret beside it held, and the answers are what they were: a wrong
// secret with a proof is 429 like any failure, a right secret with a good
// proof gets a DPoP-bound token, with a bad proof invalid_dpop_proof, and
// the good proof is still single use.
func TestProofDeferredWhileCeilingSpent(t *testing.T) {
	t.Parallel()
	const ceiling = 3
	e := newEnv(t, withTrust("127.0.0.1/32"), withCeiling(ceiling))
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	nat := header("X-Forwarded-For", "203.0.113.60")
	for range ceiling {
		wantStatus(t, post(t, e.url+PathToken, formType, grant(), basic(clients.NewClientID(), clients.NewSecret()), nat), http.StatusUnauthorized)
	}
	if !e.srv.ceiling.spent("203.0.113.60") {
		t.Fatal("ceiling not spent")
	}
	k := newProofKey(t)
	r := post(t, e.url+PathToken, formType, grant(), basic(id, clients.NewSecret()), nat, header("DPoP", k.proof(t, epoch)))
	wantStatus(t, r, http.StatusTooManyRequests)
	wantJSON(t, r, bodyBlocked)

	p := k.proof(t, epoch)
	dpopTokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id, secret), nat, header("DPoP", p)), "events.subscribe", k.jkt)
	r = post(t, e.url+PathToken, formType, grant(), basic(id, secret), nat, header("DPoP", p))
	wantStatus(t, r, http.StatusBadRequest)
	wantJSON(t, r, bodyProof("the DPoP proof was used before"))
	bad := k.sign(t, "", map[string]any{"jti": "x-123456789012", "htm": "GET", "htu": testIssuer + PathToken, "iat": epoch.Unix()})
	r = post(t, e.url+PathToken, formType, grant(), basic(id, secret), nat, header("DPoP", bad))
	wantStatus(t, r, http.StatusBadRequest)
	wantJSON(t, r, bodyProof("the DPoP proof's htm does not match the request's method"))
	// The right secret from the spent address without a proof: a bearer
	// token, as ever.
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id, secret), nat), "events.subscribe")
}
