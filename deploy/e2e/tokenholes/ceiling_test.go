//go:build unix

package tokenholes

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestCeilingPerMinute (issue 59, hole 11): the per-address ceiling admits
// the documented 600 failed requests a minute, not twice as many. From one
// address, 600 requests without credentials are answered 401; the next 200,
// sent at once, are all 429 with a Retry-After that reaches to a minute
// after the first failure (the seconds until the oldest counted failures
// leave). The token bucket the issue was filed against refilled 10 a
// second: some of those 200 got 401 again, and its Retry-After was 1.
func TestCeilingPerMinute(t *testing.T) {
	s := prepare(t)
	s.startAuth(t)
	hc := from("127.0.11.1")
	start := time.Now()
	if got := flood(t, s, "127.0.11.1", ceiling, ""); got[http.StatusUnauthorized] != ceiling {
		t.Fatalf("the first %d failures: %v (status: count), want every one 401", ceiling, got)
	}
	for i := range 200 {
		a := post(t, hc, s.auth+pathToken, formType, grant)
		elapsed := time.Since(start)
		wantAnswer(t, "failure "+strconv.Itoa(ceiling+i+1), a, http.StatusTooManyRequests, bodyBudgetSpent)
		ra, err := strconv.Atoi(a.header.Get("Retry-After"))
		// The first failure was counted after start: it leaves more than
		// 60 s - elapsed from now, which Retry-After rounds up.
		if least := 60 - int(elapsed.Seconds()) - 1; err != nil || ra < least || ra > 60 {
			t.Fatalf("failure %d, %v after the first: Retry-After %q, want %d to 60", ceiling+i+1, elapsed.Round(time.Millisecond), a.header.Get("Retry-After"), least)
		}
	}
}

// TestCeilingEveryMinute (long suite; issue 59, hole 11): a flood of
// failed requests from one address for 61 s, as fast as one connection
// sends them, is admitted (answered 401 rather than 429) at most 600 times
// in any 60 s. Each answer's decision lies between its request's sending
// and its answer's arrival, so failures i..j fall within 60 s whenever the
// answer to j arrived less than 60 s after i was sent.
func TestCeilingEveryMinute(t *testing.T) {
	redistest.Long(t)
	s := prepare(t)
	s.Env = append(s.Env, "LOG_LEVEL=warn") // some 60,000 requests: no access records
	s.startAuth(t)
	hc := from("127.0.11.2")
	type admitted struct{ sent, recv time.Time }
	var ok []admitted
	statuses := map[int]int{}
	for start := time.Now(); time.Since(start) < 61*time.Second; {
		sent := time.Now()
		a := post(t, hc, s.auth+pathToken, formType, grant)
		statuses[a.status]++
		if a.status == http.StatusUnauthorized {
			ok = append(ok, admitted{sent, time.Now()})
		}
	}
	t.Logf("61 s of failures from one address: %v (status: count)", statuses)
	j := 0
	for i := range ok {
		for j < len(ok) && ok[j].recv.Sub(ok[i].sent) < time.Minute {
			j++
		}
		if j-i > ceiling {
			t.Fatalf("%d failures admitted within 60 s (from the %d-th on)", j-i, i+1)
		}
	}
}
