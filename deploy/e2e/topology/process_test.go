//go:build unix

package topology

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// The process kit (deploy/e2e/e2etest) by the names this package's tests use.
type process = e2etest.Process

var (
	requireCommand = e2etest.RequireCommand
	repoRoot       = e2etest.RepoRoot
	builtServers   = e2etest.BuildServers
	baseEnv        = e2etest.BaseEnv
	startProcess   = e2etest.StartProcess
	waitOK         = e2etest.WaitOK
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// servedBy waits until one of servers has logged the request with the given
// id and returns that server and the record.
func servedBy(t *testing.T, servers []*server, id string) (*server, map[string]any) {
	t.Helper()
	if id == "" {
		t.Fatal("the answer carries no X-Request-Id")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, s := range servers {
			if rec, ok := s.AccessRecord(id); ok {
				return s, rec
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica logged request %s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// server is a replica of the token service or of the resource server.
type server struct {
	*process
	base    string // http://127.0.0.1:PORT
	metrics string // host:port of its /metrics listener
	admin   string // http://127.0.0.1:PORT of its admin API (authserver)
}

func (s *server) String() string { return fmt.Sprintf("%s (%s)", s.Name, s.base) }
