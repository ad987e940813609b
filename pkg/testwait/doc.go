// Package testwait provides Eventually, the one condition wait of the
// tests: poll a condition until it holds, or fail the test after a bound,
// instead of sleeping a fixed time and hoping the condition holds by then.
//
// Timing itself (what must happen after how long) is asserted with
// testing/synctest and its fake clock where the code under test runs
// without real network I/O, or with an injected clock (package testclock);
// Eventually is for waiting on real processes: Redis, servers, watchers.
package testwait
