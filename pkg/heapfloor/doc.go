// Package heapfloor keeps the Go garbage collector's heap goal from falling
// below a floor (Floor, 20 MiB), the way GOGC would if it were set for the
// live heap of the moment: while the live heap is small the collector's
// percent is raised so that the goal is the floor, and once half the floor
// is live it is Go's default (100) again. Both servers run it while they
// serve, unless the environment sets GOGC (an operator's setting wins).
//
// Why: the servers' live heaps are small (4-7 MB under load) and their
// allocations per request steady, so at Go's default the collector runs
// tens of times a second, and each cycle's fixed part (the goroutines'
// stacks, the globals, the phases) is paid that often: 5-7% of either
// server's CPU in the harness's profiles. A larger GOGC saves most of it
// but multiplies the heap with whatever is live (GOGC=400: five times,
// many open connections included); a floor costs at most its own size in
// resident memory, and nothing once the live heap is large. GOMEMLIMIT, the
// runtime's own knob, is a ceiling, not a floor. The memory ballast that
// programs used before (a large never-touched allocation) raises the goal
// the same way but is counted as live heap by everything that reads it.
//
// The runtime has no floor of its own, so after every cycle a cleanup
// (runtime.AddCleanup on an object each cycle collects) reads the live
// heap that cycle marked from runtime/metrics and sets the percent for
// the next with debug.SetGCPercent: a few lines by hand, as the libraries
// that do this (GC tuners) are small and unmaintained. Start runs one
// cycle itself, so the percent is set from the start.
package heapfloor
