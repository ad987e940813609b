//go:build !race

package clients_test

// raceEnabled: this test binary has no race detector.
const raceEnabled = false
