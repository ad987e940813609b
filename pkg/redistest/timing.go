package redistest

import (
	"os"
	"testing"
	"time"
)

// HangGuard is how long a quick test lets a call that has a bound of its
// own (a command budget, a caller's deadline, a recovery time) take before
// it calls the call hung. It only guards against a hang: the quick suite
// runs beside other work on a shared machine, where a tight bound fails
// for the machine's sake. The bound itself is asserted by AtMost in the
// long suites.
const HangGuard = 30 * time.Second

// LongSuite reports whether the long suites run (LONG_TESTS=1, see Long):
// the runs that assert wall-clock bounds.
func LongSuite() bool { return os.Getenv(LongEnv) == "1" }

// AtMost checks took, how long what took, against bound in the long suites
// and against HangGuard in the quick suite, failing t (Errorf) when it is
// over; it reports whether took passed. A quick test asserts what proves
// the bound without a clock (the error that says the budget fired) beside
// it.
func AtMost(t testing.TB, what string, took, bound time.Duration) bool {
	t.Helper()
	switch {
	case LongSuite() && took > bound:
		t.Errorf("%s took %v, want at most %v", what, took.Round(time.Millisecond), bound)
		return false
	case took > HangGuard:
		t.Errorf("%s took %v: hung (the quick suite's guard is %v; the bound, %v, is asserted with %s=1)",
			what, took.Round(time.Millisecond), HangGuard, bound, LongEnv)
		return false
	}
	return true
}
