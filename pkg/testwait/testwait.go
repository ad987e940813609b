package testwait

import (
	"testing"
	"time"
)

// maxPoll is the longest pause between two checks of the condition.
const maxPoll = 50 * time.Millisecond

// Eventually checks cond until it holds and returns how long that took,
// or fails the test (t.Fatalf, naming what) once within has passed. The
// pause between checks starts at a millisecond and doubles up to 50 ms, so
// a condition that holds soon is seen soon and a slow one (a Redis failover)
// is not polled in a busy loop. It calls t.Fatalf, so it must run on the
// test's goroutine. Inside a testing/synctest bubble within is fake time.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return Until(t, within, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// errNotYet is Eventually's condition not holding yet.
var errNotYet = notYet{}

type notYet struct{}

func (notYet) Error() string { return "not yet" }

// Until is Eventually for a condition that says why it does not hold yet:
// cond returns nil once it holds, else what it saw, and the failure names
// the last of those (a value still wrong, a status still refused).
func Until(t testing.TB, within time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	for pause := time.Millisecond; ; pause = min(2*pause, maxPoll) {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > within {
			if err == errNotYet {
				t.Fatalf("not within %v: %s", within, what)
			} else {
				t.Fatalf("not within %v: %s (last: %v)", within, what, err)
			}
			return 0
		}
		time.Sleep(pause)
	}
}
