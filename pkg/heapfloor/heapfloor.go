package heapfloor

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// Floor is the servers' heap goal floor: 20 MiB, which keeps each under
// the 64 MiB of resident memory its load test allows with room to spare
// (the load harness's peak RSS targets, go run ./deploy/bench: each
// server's largest VmHWM over its scenarios).
const Floor = 20 << 20

// DefaultPercent is Go's GOGC when none is set.
const DefaultPercent = 100

// heapMinimum is the runtime's smallest heap goal at Go's default
// percent, scaled by the percent in force (defaultHeapMinimum,
// runtime/mgcpacer.go: 4 MiB x GOGC / 100).
const heapMinimum = 4 << 20

// Percent is the GOGC that puts the collector's heap goal at floor for a
// live heap of live bytes with roots bytes of stacks and globals to scan.
// The runtime's goal is live + (live + roots) x GOGC / 100, and never less
// than 4 MiB x GOGC / 100 (Go 1.18 and later; runtime/mgcpacer.go), so the
// percent is (floor - live) x 100 / (live + roots), at least
// DefaultPercent, and at most what keeps that least goal at the floor
// (500 for 20 MiB: a live heap of almost nothing gets a goal of the
// floor, not more).
func Percent(live, roots, floor uint64) int {
	most := floor * 100 / heapMinimum
	if most <= DefaultPercent || live >= floor {
		return DefaultPercent
	}
	p := most
	if live+roots > 0 {
		p = min((floor-live)*100/(live+roots), most)
	}
	return int(max(p, DefaultPercent))
}

// The runtime/metrics samples a keeper reads: the heap marked live by the
// last cycle and the stacks and globals it scanned.
var samples = []string{"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes"}

// keeper sets the percent for its floor after every cycle of the
// collector, from the live heap that cycle marked: the next goal is the
// floor, or twice what is live once that is more, never the goal of a
// percent meant for a smaller heap (a percent set by a timer could be
// seconds stale, and a heap that grew meanwhile would get it: at start-up,
// when the servers build what they keep, that took a resource server's
// peak RSS to 70 MiB).
type keeper struct {
	floor uint64
	s     []metrics.Sample

	mu      sync.Mutex
	stopped bool
	set     int // the percent in force
	before  int // the percent found
	cycles  int // the cleanups run, the last one after stop included
}

// start keeps floor until stop is called. It runs a cycle at once, so
// that the percent is set for the live heap of the moment (by the
// runtime's cleanup goroutine, a moment after start returns) rather than
// at the first cycle the load brings.
func start(floor uint64) (stop func()) { return newKeeper(floor).stop }

// newKeeper is start's keeper, running.
func newKeeper(floor uint64) *keeper {
	k := &keeper{floor: floor, s: make([]metrics.Sample, len(samples)), set: -1}
	for i, name := range samples {
		k.s[i].Name = name
	}
	k.arm()
	runtime.GC()
	return k
}

// ran is how many of k's cleanups have run.
func (k *keeper) ran() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.cycles
}

// sentinel is what each cycle collects to tell a keeper it ran: an object
// with a pointer, so that the runtime's tiny allocator, whose blocks can
// outlive their objects, never holds it.
type sentinel struct{ _ *keeper }

// arm has the next cycle call cycle (runtime.AddCleanup runs it once the
// cycle has found a fresh sentinel unreachable).
func (k *keeper) arm() {
	runtime.AddCleanup(new(sentinel), (*keeper).cycle, k)
}

func (k *keeper) cycle() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cycles++
	if k.stopped {
		return
	}
	metrics.Read(k.s)
	var v [3]uint64
	for i := range k.s {
		if k.s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = k.s[i].Value.Uint64()
		}
	}
	if p := Percent(v[0], v[1]+v[2], k.floor); p != k.set {
		before := debug.SetGCPercent(p)
		if k.set < 0 {
			k.before = before
		}
		k.set = p
	}
	k.arm()
}

// stop puts back the percent found, if it changed it.
func (k *keeper) stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.stopped && k.set >= 0 {
		debug.SetGCPercent(k.before)
	}
	k.stopped = true
}

// keeping is true while a Start of this process keeps the floor: the
// collector's percent is the process's, so one keeper at a time (several
// servers in one test process share it).
var keeping atomic.Bool

// Start keeps the servers' floor (Floor) until ctx ends or stop is
// called, whichever is first; stop puts back the percent found. It does
// nothing when getenv("GOGC") is set, nor while another Start of the
// process keeps the floor.
func Start(ctx context.Context, getenv func(string) string) (stop func()) {
	if getenv("GOGC") != "" || !keeping.CompareAndSwap(false, true) {
		return func() {}
	}
	end := start(Floor)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			end()
			keeping.Store(false)
		})
	}
	context.AfterFunc(ctx, stop)
	return stop
}
