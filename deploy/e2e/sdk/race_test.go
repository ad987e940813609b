//go:build race

package sdk

// raceEnabled: this test binary has the race detector, so TestSDKModule
// runs the SDK module's tests with it too.
const raceEnabled = true
