package clients_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// authModel is authenticate.lua's order of decisions in plain Go, for one
// client and one presenting address: the reference its replay compares the
// script with (testAuthModel). It follows the script step by step, with
// ratelimit.Model for every window it keeps:
//
//  1. a credential whose tag's failure still counts is a repeat: counted
//     apart (repeat limit), never checked again;
//  2. a spent budget of distinct wrong credentials refuses unchecked;
//  3. the credential is checked (either secret, with its id); a wrong one
//     counts a failure and leaves its tag;
//  4. the scope, then the token limit.
//
// Keys expire on the Redis clock, which does not move in these tests (the
// limits run on an injected clock): the failure log, once written, exists
// for the whole replay, and tags leave only by the script's own pruning.
type authModel struct {
	flimit, rlimit int64
	window         int64
	secrets        map[string]int64 // secret -> id
	failures       *ratelimit.Model
	failed         bool             // the failure log exists
	tags           map[string]int64 // wrong credential -> when its failure was counted
	repeats        *ratelimit.Model
	tokens         *ratelimit.Model
}

func newAuthModel(flimit, rlimit, tokenLimit int64) *authModel {
	w := clients.Window.Milliseconds()
	return &authModel{
		flimit: flimit, rlimit: rlimit, window: w,
		secrets: map[string]int64{}, tags: map[string]int64{},
		failures: ratelimit.NewModel(flimit, clients.Window), repeats: ratelimit.NewModel(rlimit, clients.Window),
		tokens: ratelimit.NewModel(tokenLimit, clients.Window),
	}
}

// modelResult is what the replay compares.
type modelResult struct {
	Outcome  clients.AuthOutcome
	Repeated bool
	SecretID int64
	Allowed  bool // the token limit's decision (Authenticated or TokenLimited)
}

func (m *authModel) attempt(secret string, now int64) modelResult {
	count := int64(0)
	if m.failed {
		// A tag counts while its own failure is less than a window old
		// (that failure's bucket is then counted too).
		if seen, ok := m.tags[secret]; ok && seen > now-m.window {
			if d := m.repeats.DecideMS(now); !d.Allowed {
				return modelResult{Outcome: clients.TooManyFailures, Repeated: true}
			}
			return modelResult{Outcome: clients.BadCredentials, Repeated: true}
		}
		count = m.failures.Counted(now)
	}
	if count >= m.flimit {
		return modelResult{Outcome: clients.TooManyFailures}
	}
	sid, ok := m.secrets[secret]
	if !ok {
		m.failures.DecideMS(now)
		m.failed = true
		if int64(len(m.tags)) >= m.flimit {
			for tag, at := range m.tags {
				if at <= now-m.window {
					delete(m.tags, tag)
				}
			}
		}
		m.tags[secret] = now
		return modelResult{Outcome: clients.BadCredentials}
	}
	d := m.tokens.DecideMS(now)
	if !d.Allowed {
		return modelResult{Outcome: clients.TokenLimited, SecretID: sid}
	}
	return modelResult{Outcome: clients.Authenticated, SecretID: sid, Allowed: true}
}

// testAuthModel replays random attempts (the two secrets, stale and made-up
// wrong ones, a secret retired midway) against the script and the model,
// with the clock moving by random steps, and requires every decision to be
// the model's.
func testAuthModel(t *testing.T, e *env) {
	const flimit, rlimit, tokenLimit = 4, 6, 8
	c, first := e.hospital(t)
	if _, err := e.store.SetTokenRateLimit(ctx(t), c.ID, tokenLimit); err != nil {
		t.Fatal(err)
	}
	_, sid2, second, err := e.store.AddSecret(ctx(t), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	m := newAuthModel(flimit, rlimit, tokenLimit)
	m.secrets[first], m.secrets[second] = 1, sid2
	wrong := []string{"stale-1", "stale-2", "guess-1", "guess-2", "guess-3", "guess-4", "guess-5", "guess-6"}
	rng := rand.New(rand.NewPCG(7, uint64(len(c.ID))))
	const steps = 400
	seen := map[modelResult]int{}
	for i := range steps {
		if i == steps/2 {
			if _, err := e.store.RetireSecret(ctx(t), c.ID, 1); err != nil {
				t.Fatal(err)
			}
			delete(m.secrets, first)
		}
		var secret string
		switch r := rng.IntN(10); {
		case r < 3:
			secret = first
		case r < 5:
			secret = second
		default:
			secret = wrong[rng.IntN(len(wrong))]
		}
		e.clock.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
		got := e.attempt(t, clients.Attempt{ClientID: c.ID, Secret: secret, Address: testAddr, FailureLimit: flimit, RepeatLimit: rlimit, Token: true})
		want := m.attempt(secret, e.clock.Now().UnixMilli())
		res := modelResult{Outcome: got.Outcome, Repeated: got.Repeated, Allowed: got.Decision.Allowed}
		if got.Outcome == clients.Authenticated || got.Outcome == clients.TokenLimited {
			res.SecretID = got.SecretID
		}
		if res != want {
			t.Fatalf("step %d (secret %.12s…, t=%d): script %+v, model %+v", i, secret, e.clock.Now().UnixMilli(), res, want)
		}
		seen[modelResult{Outcome: res.Outcome, Repeated: res.Repeated}]++
	}
	// The replay reached every branch of the script.
	for _, r := range []modelResult{{Outcome: clients.Authenticated}, {Outcome: clients.BadCredentials}, {Outcome: clients.BadCredentials, Repeated: true},
		{Outcome: clients.TooManyFailures}, {Outcome: clients.TooManyFailures, Repeated: true}, {Outcome: clients.TokenLimited}} {
		if seen[r] == 0 {
			t.Errorf("no step ended %+v: %v", r, seen)
		}
	}
}
