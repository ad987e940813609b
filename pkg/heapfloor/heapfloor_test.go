package heapfloor

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/testwait"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		live, roots, floor uint64
		want               int
	}{
		{4 * mib, 0, 20 * mib, 400},                   // goal 4 + 4 x 4 = 20
		{4 * mib, 1 * mib, 20 * mib, 320},             // goal 4 + 5 x 3.2 = 20
		{6 * mib, 1 * mib, 20 * mib, 200},             // goal 6 + 7 x 2 = 20
		{10 * mib, 0, 20 * mib, DefaultPercent},       // half the floor live: Go's default
		{15 * mib, 0, 20 * mib, DefaultPercent},       // more: never below it
		{40 * mib, 2 * mib, 20 * mib, DefaultPercent}, // above the floor
		{100 << 10, 0, 20 * mib, 500},                 // almost nothing live: the least goal at the floor
		{0, 0, 20 * mib, 500},                         // nothing measured
		{0, 0, 64 * mib, 1600},
		{0, 0, 4 * mib, DefaultPercent}, // a floor at Go's own least goal
	} {
		if got := Percent(tt.live, tt.roots, tt.floor); got != tt.want {
			t.Errorf("Percent(%d, %d, %d) = %d, want %d", tt.live, tt.roots, tt.floor, got, tt.want)
		}
	}
}

// read returns the collector's percent as the runtime holds it and
// Percent's live and roots as the runtime reports them.
func read(t *testing.T) (gogc uint64, live, roots uint64) {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: samples[0]}, {Name: samples[1]}, {Name: samples[2]}}
	metrics.Read(s)
	for _, x := range s {
		if x.Value.Kind() != metrics.KindUint64 {
			t.Fatalf("%s not supported", x.Name)
		}
	}
	return s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64() + s[3].Value.Uint64()
}

// waitPercent collects until the percent is what want says for the live
// heap of the moment (the keeper sets it after each cycle, on the
// runtime's cleanup goroutine).
func waitPercent(t *testing.T, what string, want func(live, roots uint64) uint64) {
	t.Helper()
	testwait.Until(t, 5*time.Second, what, func() error {
		runtime.GC()
		p, live, roots := read(t)
		if w := want(live, roots); p != w {
			return fmt.Errorf("GOGC %d, want %d (live %d, roots %d)", p, w, live, roots)
		}
		return nil
	})
}

// TestKeeper: in this test process (a few MB live), a floor of 64 MiB
// raises the percent after the next cycle, a floor below the live heap
// leaves Go's default, and stop puts back the percent found.
func TestKeeper(t *testing.T) {
	before := debug.SetGCPercent(137)
	defer debug.SetGCPercent(before)
	for _, floor := range []uint64{64 << 20, 1 << 10} {
		k := newKeeper(floor)
		stop := k.stop
		waitPercent(t, "kept", func(live, roots uint64) uint64 { return uint64(Percent(live, roots, floor)) })
		if p, live, _ := read(t); floor > 2*live && p <= DefaultPercent {
			t.Errorf("floor %d, live %d: GOGC %d, want it raised", floor, live, p)
		}
		stop()
		if p, _, _ := read(t); p != 137 {
			t.Errorf("floor %d: GOGC %d after stop, want the 137 it found", floor, p)
		}
		// The stopped keeper's last cleanup, armed before stop, runs after
		// this cycle and must change nothing.
		ran := k.ran()
		runtime.GC()
		testwait.Eventually(t, 5*time.Second, "the stopped keeper's last cleanup", func() bool { return k.ran() > ran })
		if p, _, _ := read(t); p != 137 {
			t.Errorf("floor %d: GOGC %d after a cycle past stop, want 137", floor, p)
		}
	}
}

// TestStart: GOGC in the environment leaves the percent alone; without it
// the floor is kept until the context ends, and a second Start while the
// first keeps it does nothing.
func TestStart(t *testing.T) {
	before := debug.SetGCPercent(DefaultPercent)
	defer debug.SetGCPercent(before)
	ctx, cancel := context.WithCancel(context.Background())

	stop := Start(ctx, func(k string) string { return map[string]string{"GOGC": "100"}[k] })
	if keeping.Load() {
		t.Error("with GOGC set: a keeper started")
	}
	runtime.GC()
	if p, _, _ := read(t); p != DefaultPercent {
		t.Errorf("with GOGC set: GOGC %d, want %d", p, DefaultPercent)
	}
	stop()

	Start(ctx, func(string) string { return "" })
	floorPercent := func(live, roots uint64) uint64 { return uint64(Percent(live, roots, Floor)) }
	waitPercent(t, "kept", floorPercent)
	if p, live, _ := read(t); p <= DefaultPercent {
		t.Errorf("kept: GOGC %d with %d live, want it above %d", p, live, DefaultPercent)
	}
	second := Start(ctx, func(string) string { return "" })
	second() // not the keeper: nothing to stop
	waitPercent(t, "after a second Start's stop", floorPercent)
	cancel()
	waitPercent(t, "after the context ended", func(uint64, uint64) uint64 { return DefaultPercent })
	testwait.Eventually(t, time.Second, "the keeper stops once the context ended", func() bool { return !keeping.Load() })
}
