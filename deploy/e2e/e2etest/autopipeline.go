package e2etest

import (
	"os"
	"testing"

	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
)

// AutoPipelineEnv is the variable that sets both servers' automatic
// pipelining (README: REDIS_AUTOPIPELINE, off by default). The suites read
// it from their own environment, so that one command runs them all with
// it on or off (the default):
//
//	LONG_TESTS=1 REDIS_AUTOPIPELINE=true go test -run TestFailover ./deploy/e2e/topology
//
// NewServers follows it (AutoPipeline), and BaseEnv hands it to the
// processes.
const AutoPipelineEnv = "REDIS_AUTOPIPELINE"

// AutoPipeline reports whether the servers of this run pipeline their
// per-request scripts, read as the servers read it (cli.EnvBool, default
// serveconfig.DefaultAutoPipeline); a value they would refuse fails the
// test.
func AutoPipeline(t testing.TB) bool {
	t.Helper()
	on, err := cli.EnvBool(os.Getenv, AutoPipelineEnv, serveconfig.DefaultAutoPipeline)
	if err != nil {
		t.Fatal(err)
	}
	return on
}

// autoPipelineEnv is the entry BaseEnv gives every process: the test's own
// value, which the servers read (and refuse if it is not a boolean), or
// none for their default.
func autoPipelineEnv() []string {
	if v := os.Getenv(AutoPipelineEnv); v != "" {
		return []string{AutoPipelineEnv + "=" + v}
	}
	return nil
}
