//go:build unix

package topology

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
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
	var (
		by  *server
		rec map[string]any
	)
	testwait.Eventually(t, 5*time.Second, "a replica logs request "+id, func() bool {
		for _, s := range servers {
			if r, ok := s.AccessRecord(id); ok {
				by, rec = s, r
				return true
			}
		}
		return false
	})
	return by, rec
}

// server is a replica of the token service or of the resource server.
type server struct {
	*process
	base    string // http://127.0.0.1:PORT
	metrics string // host:port of its /metrics listener
	admin   string // http://127.0.0.1:PORT of its admin API (authserver)
	// How it was started, for a replacement on the same port
	// (TestRollingRestart).
	port int
	bin  string
	env  []string
	args []string
}

func (s *server) String() string { return fmt.Sprintf("%s (%s)", s.Name, s.base) }
