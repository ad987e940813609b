package redistest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// errorRecorder records Errorf instead of failing the test.
type errorRecorder struct {
	testing.TB
	errs []string
}

func (r *errorRecorder) Helper() {}
func (r *errorRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestAtMost: the bound is asserted in the long suites only; the quick
// suite fails a call only past HangGuard.
func TestAtMost(t *testing.T) {
	for _, tc := range []struct {
		long       string
		took, want time.Duration
		pass       bool
	}{
		{"1", 900 * time.Millisecond, time.Second, true},
		{"1", 2 * time.Second, time.Second, false},
		{"", 2 * time.Second, time.Second, true},
		{"", redistest.HangGuard + time.Second, time.Second, false},
	} {
		t.Run(fmt.Sprintf("%s=%q took %v", redistest.LongEnv, tc.long, tc.took), func(t *testing.T) {
			t.Setenv(redistest.LongEnv, tc.long)
			if got := redistest.LongSuite(); got != (tc.long == "1") {
				t.Errorf("LongSuite() = %v", got)
			}
			rec := &errorRecorder{TB: t}
			if ok := redistest.AtMost(rec, "the call", tc.took, tc.want); ok != tc.pass || (len(rec.errs) == 0) != tc.pass {
				t.Errorf("AtMost = %v, errors %q; want pass %v", ok, rec.errs, tc.pass)
			}
		})
	}
}
