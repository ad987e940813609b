package tokenserver

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// TestStaleInstanceNeverLocksOutItsSiblings is the lockout of issue 21 on
// the wire, on two replicas: behind one address, an instance still sending
// its client's rotated-out secret at 20 requests a second, while a sibling
// instance of the same client asks for a token every 500 ms with the right
// secret. Every one of the sibling's requests gets a token (before the
// change, once 60 stale attempts had spent the address's failure budget
// for the client, they got 429); the stale secret is checked once and then
// answered 401 unchecked, and 429 past its own repeat limit. A guesser at
// the same address still gets exactly the budget of distinct secrets
// checked.
func TestStaleInstanceNeverLocksOutItsSiblings(t *testing.T) {
	t.Parallel()
	const budget, repeats = 60, 100
	e := newEnv(t, withTrust("127.0.0.1/32"), withFailures(budget), withRepeats(repeats))
	other, _ := e.start(e.keys)
	id, old := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	if _, err := e.store.SetTokenRateLimit(t.Context(), id, 1000); err != nil {
		t.Fatal(err)
	}
	_, secret, err := e.store.RotateSecret(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	nat := header("X-Forwarded-For", "203.0.113.60")
	stale := map[int]int{}
	ok, n := 0, 0
	before := e.checked()
	for i := range 20 * 20 { // 20 seconds at 20 a second
		base := []string{e.url, other}[i%2]
		r := post(t, base+PathToken, formType, grant(), basic(id, old), nat)
		stale[r.Status]++
		switch r.Status {
		case http.StatusUnauthorized:
			wantJSON(t, r, bodyInvalidClient)
		case http.StatusTooManyRequests:
			wantJSON(t, r, bodyBlocked)
		default:
			t.Fatalf("stale secret: %d %s", r.Status, r.Body)
		}
		if i%10 == 0 {
			n++
			if r := post(t, base+PathToken, formType, grant(), basic(id, secret), nat); r.Status == http.StatusOK {
				ok++
			} else {
				t.Errorf("right secret at +%v: %d %s, want 200", time.Duration(i)*50*time.Millisecond, r.Status, r.Body)
			}
		}
		e.rate.Add(50 * time.Millisecond)
	}
	checked := e.checked() - before
	t.Logf("stale secret at 20/s for 20 s: %v (status: count); right secret %d of %d answered 200; %d secrets checked", stale, ok, n, checked)
	// The stale secret: 1 checked, then `repeats` repeats answered 401.
	if stale[http.StatusUnauthorized] != 1+repeats || ok != n || checked != int64(1+n) {
		t.Errorf("stale %v, right secret %d of %d, %d checked; want %d x 401, every right one 200, %d checked", stale, ok, n, checked, 1+repeats, 1+n)
	}
	if !strings.Contains(e.logs.String(), `"repeated_secret":true`) {
		t.Error("no access record says repeated_secret")
	}

	// A guesser at the same address: exactly the budget less the stale
	// secret's one slot is checked.
	guessed := map[int]int{}
	for range 100 {
		guessed[post(t, e.url+PathToken, formType, grant(), basic(id, clients.NewSecret()), nat).Status]++
	}
	if guessed[http.StatusUnauthorized] != budget-1 || guessed[http.StatusTooManyRequests] != 100-budget+1 {
		t.Errorf("100 distinct guesses: %v, want %d x 401 and the rest 429", guessed, budget-1)
	}
}

// TestCeilingAnswersKnownAndUnknownAlike: once an address has spent its
// ceiling of failed requests, a wrong secret for an existing client and any
// secret for an id that names no client get the same 429 (body and
// Retry-After); before that, the same 401; and a known id's failure spends
// the ceiling exactly as an unknown one's, so not even the ceiling's state
// tells them apart. Valid credentials from that address still get tokens.
func TestCeilingAnswersKnownAndUnknownAlike(t *testing.T) {
	t.Parallel()
	const ceiling = 6
	e := newEnv(t, withTrust("127.0.0.1/32"), withCeiling(ceiling))
	known, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	from := func(addr string) func(*http.Request) { return header("X-Forwarded-For", addr) }
	type answer struct {
		status     int
		body       string
		retryAfter string
	}
	try := func(id, addr string) answer {
		t.Helper()
		r := post(t, e.url+PathToken, formType, grant(), basic(id, clients.NewSecret()), from(addr))
		return answer{r.Status, string(r.Body), r.Header.Get("Retry-After")}
	}
	// Spend all but one of two addresses' ceilings, one with known ids,
	// one with unknown ones; the last attempt of each is then answered
	// alike, and so is everything after.
	for i, probe := range []string{"known", "unknown"} {
		addrA, addrB := fmt.Sprintf("203.0.113.%d", 70+2*i), fmt.Sprintf("203.0.113.%d", 71+2*i)
		for range ceiling - 1 {
			try(known, addrA)
			try(clients.NewClientID(), addrB)
		}
		probeID := known
		if probe == "unknown" {
			probeID = clients.NewClientID()
		}
		// The probe is the last failure either ceiling admits.
		a, b := try(probeID, addrA), try(probeID, addrB)
		if a.status != http.StatusUnauthorized || a != b {
			t.Errorf("%s id, last failure under the ceiling: %+v and %+v, want the same 401", probe, a, b)
		}
		for _, id := range []string{known, clients.NewClientID()} {
			a, b := try(id, addrA), try(id, addrB)
			if a.status != http.StatusTooManyRequests || a.body != bodyBlocked || a.retryAfter == "" || a != b {
				t.Errorf("after a %s probe: %+v and %+v, want the same 429 slow_down", probe, a, b)
			}
		}
	}
	// Known and unknown ids from a spent address: byte-identical answers.
	const spent = "203.0.113.70"
	k, u := try(known, spent), try(clients.NewClientID(), spent)
	if k != u || k.status != http.StatusTooManyRequests {
		t.Errorf("spent address: known id %+v, unknown id %+v; want the same 429", k, u)
	}
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(known, secret), from(spent)), "events.subscribe")
}
