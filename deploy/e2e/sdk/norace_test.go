//go:build !race

package sdk

// raceEnabled: this test binary has no race detector.
const raceEnabled = false
