// Package testclock provides a clock that tests move by hand, safe for use
// by the servers' goroutines while the test sets it. The services take their
// clocks as func() time.Time; pass Clock.Now.
package testclock
