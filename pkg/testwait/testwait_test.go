package testwait_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/partnerapi/authplatform/pkg/testwait"
)

// A condition that holds after 120 ms (fake time) is seen within a poll of
// it: Eventually returns between 120 ms and 120 ms plus the longest pause.
func TestEventuallyReturnsWhenTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		d := testwait.Eventually(t, time.Second, "120 ms passed", func() bool {
			return time.Since(start) >= 120*time.Millisecond
		})
		if d < 120*time.Millisecond || d > 120*time.Millisecond+50*time.Millisecond {
			t.Errorf("Eventually returned after %v, want 120ms to 170ms", d)
		}
	})
}

// fatalRecorder records Fatalf instead of ending the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
}

// A condition that never holds fails the test once within has passed, not
// before.
func TestEventuallyFailsAfterWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &fatalRecorder{TB: t}
		start := time.Now()
		testwait.Eventually(rec, 300*time.Millisecond, "never", func() bool { return false })
		if d := time.Since(start); rec.msg == "" || d < 300*time.Millisecond || d > 350*time.Millisecond {
			t.Errorf("after %v: Fatalf %q, want a failure after 300ms to 350ms", d, rec.msg)
		}
	})
}
