package redisconn_test

import (
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestPingFrozenReplica pings a Cluster with one replica frozen (SIGSTOP:
// the kernel accepts its connections, nothing answers) from many fresh
// clients, as each run of an operator command is (authserver's openRedis
// pings with 3 s): every one must find the Cluster within the timeout.
// A fresh client discovers the Cluster by asking nodes in random order, so
// some meet the frozen one once or twice; before Ping tried again, a client
// that met it twice failed after 2 s (context deadline exceeded): 7, 7 and
// 10 of the 48 in three runs with this URL (a single command meeting it
// twice outlives its budget, whatever Ping's timeout). The quick suite
// gives Ping redistest.HangGuard, the long suites the operator commands'
// 3 s: 48 fresh clients at once on a loaded machine may take longer than
// that without any of them failing so.
func TestPingFrozenReplica(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	var primary, replica *redistest.Server
	for _, p := range c.Primaries(t) {
		if rs := c.ReplicasOf(t, p); len(rs) > 0 {
			primary, replica = p, rs[0]
			break
		}
	}
	if replica == nil {
		t.Fatal("the Cluster has no replica")
	}
	// Seeded with the frozen replica and one primary, as an operator may
	// seed a URL with two nodes: half the clients ask the frozen one first
	// for the slot map, and one in six of all for the command table.
	url := "redis+cluster://" + replica.Addr() + "?addr=" + primary.Addr()
	replica.Freeze()
	t.Cleanup(replica.Thaw)
	const clients = 48
	timeout := redistest.HangGuard
	if redistest.LongSuite() {
		timeout = 3 * time.Second
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
		met    int // clients that took over a second: met the frozen node
	)
	for i := range clients {
		wg.Go(func() {
			rdb := open(t, url)
			start := time.Now()
			err := redisconn.Ping(t.Context(), rdb, timeout)
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if took > time.Second {
				met++
			}
			if err != nil {
				failed++
				t.Errorf("client %d: Ping: %v after %v", i, err, took.Round(time.Millisecond))
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d fresh clients failed, %d met the frozen replica (took over 1 s)", failed, clients, met)
}
