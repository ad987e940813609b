//go:build unix

package e2etest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// Servers is where a suite's stack of real binaries starts: the built
// servers, a directory of the test's own, and the environment every
// server and CLI process of the test gets.
type Servers struct {
	// Bin holds authserver and resourceserver (BuildServers).
	Bin string
	// Dir is the test's own directory, also the processes' HOME.
	Dir string
	// Env is BaseEnv(Dir), the Redis (REDIS_URL, or 127.0.0.1:6379) under a
	// key prefix of the test's own, LOG_LEVEL=info, then what
	// PrepareServers was given.
	Env []string
}

// PrepareServers builds both servers and makes their environment (env
// after the rest, so it wins), or skips the test: under -short, or
// without a Redis (under CI=true a missing Redis fails it instead). It
// starts no process.
func PrepareServers(t *testing.T, env ...string) *Servers {
	t.Helper()
	return PrepareServersOn(t, redistest.URL(), env...)
}

// PrepareServersOn is PrepareServers on the Redis of redisURL (a node, a
// Sentinel group or a Cluster of the test's own).
func PrepareServersOn(t *testing.T, redisURL string, env ...string) *Servers {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test builds and starts the servers")
	}
	rdb, err := redisconn.Open(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	if err := redisconn.Ping(context.Background(), rdb, 2*time.Second); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Redis at %s and CI=true forbids skipping: %v", redisURL, err)
		}
		t.Skipf("no Redis at %s: %v", redisURL, err)
	}
	s := &Servers{Bin: BuildServers(t), Dir: t.TempDir()}
	s.Env = append(BaseEnv(s.Dir), "REDIS_URL="+redisURL, "REDIS_KEY_PREFIX="+redistest.Prefix(t, rdb), "LOG_LEVEL=info")
	s.Env = append(s.Env, env...)
	return s
}

// CLI runs the operator command `authserver args...` with Env and returns
// its stdout; a failure fails t with its stderr.
func (s *Servers) CLI(t testing.TB, args ...string) []byte {
	t.Helper()
	out, errOut, err := s.CLIStatus(args...)
	if err != nil {
		t.Fatalf("authserver %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// CLIStatus runs `authserver args...` with Env and returns its stdout, its
// stderr and its error, for a test that expects it to fail.
func (s *Servers) CLIStatus(args ...string) ([]byte, string, error) {
	cmd := exec.Command(filepath.Join(s.Bin, "authserver"), args...)
	cmd.Env = s.Env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return out, stderr.String(), err
}
