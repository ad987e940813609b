package redistest

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClusterPortBelowEphemeral: a Cluster node's port and its bus port
// are below the range the kernel gives outgoing connections, apart from
// FreePort's range, and never handed out twice.
func TestClusterPortBelowEphemeral(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 200 {
		p, err := ClusterPort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("ClusterPort gave %d twice", p)
		}
		seen[p] = true
		if p < clusterPortLow || p < freePortHigh {
			t.Fatalf("ClusterPort = %d, below %d (FreePort's range ends at %d)", p, clusterPortLow, freePortHigh-1)
		}
		if low-clusterBusOffset-clusterPortLow >= 1000 && p+clusterBusOffset >= low {
			t.Fatalf("ClusterPort = %d: its bus port %d is in the ephemeral range, which starts at %d", p, p+clusterBusOffset, low)
		}
	}
}

// TestStartFreshPortTaken: a Cluster node whose bus port another process
// took after the check exits at once ("Address already in use"), and
// startFresh starts it on the next port it picks instead of failing the
// test after the start's 10 s.
func TestStartFreshPortTaken(t *testing.T) {
	requireBinary(t, "redis-server")
	taken := clusterPort(t)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(taken+clusterBusOffset))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var picked []int
	pick := func(t testing.TB) int {
		p := taken
		if len(picked) > 0 {
			p = clusterPort(t)
		}
		picked = append(picked, p)
		return p
	}
	start := time.Now()
	s := startFresh(t, pick, []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"})
	t.Cleanup(s.Kill)
	elapsed := time.Since(start)
	if len(picked) != 2 || s.Port != picked[1] {
		t.Fatalf("picked %v, server on %d: want a second port after %d's bus port was taken", picked, s.Port, taken)
	}
	rdb := redis.NewClient(probeOptions(s.Addr()))
	defer rdb.Close()
	info, err := rdb.ClusterInfo(t.Context()).Result()
	if err != nil || !strings.Contains(info, "cluster_state:") {
		t.Fatalf("CLUSTER INFO on %s: %q, %v", s.Addr(), info, err)
	}
	// The first try ended when redis-server exited, not after 10 s: a try
	// that timed out is no errPortTaken, and startFresh would have failed
	// the test instead of picking a second port. The time it took is the
	// long suites' check.
	AtMost(t, "starting with the first port's bus port taken", elapsed, 5*time.Second)
}
