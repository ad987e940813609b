//go:build race

package clients_test

// raceEnabled: this test binary has the race detector.
const raceEnabled = true
