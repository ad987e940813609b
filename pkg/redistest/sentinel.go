package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/testwait"
	"github.com/redis/go-redis/v9"
)

// Sentinel is a Sentinel-managed group: a primary, one replica and three
// sentinels (quorum 2) on loopback.
type Sentinel struct {
	// Master is the name the sentinels monitor.
	Master    string
	Nodes     []*Server // the primary as started, then its replica
	Sentinels []*Server
}

// sentinelDownAfter is how long the sentinels wait before they call a
// primary down; operators use more (5-30 s), tests want a short failover.
const sentinelDownAfter = 1000 * time.Millisecond

// StartSentinel starts the group, waits until the replica is synced and
// every sentinel knows the replica and the other sentinels, and stops it
// when the test ends.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	requireBinary(t, "redis-server")
	requireBinary(t, "redis-sentinel")
	g := &Sentinel{Master: "partnerapi"}
	primary := startNode(t, FreePort)
	t.Cleanup(primary.Kill)
	replica := startNode(t, FreePort, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port))
	t.Cleanup(replica.Kill)
	g.Nodes = []*Server{primary, replica}
	for range 3 {
		s := &Server{Port: FreePort(t), Dir: t.TempDir(), t: t}
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 1\n",
			s.Port, s.Dir, filepath.Join(s.Dir, "redis.log"), g.Master, primary.Port,
			g.Master, sentinelDownAfter.Milliseconds(), g.Master, g.Master)
		path := filepath.Join(s.Dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		s.startCommand(exec.Command("redis-sentinel", path))
		t.Cleanup(s.Kill)
		g.Sentinels = append(g.Sentinels, s)
	}
	ctx := context.Background()
	testwait.Eventually(t, 30*time.Second, "replica synced", func() bool {
		return infoField(ctx, replica, "replication", "master_link_status") == "up"
	})
	testwait.Eventually(t, 30*time.Second, "sentinels know the replica and each other", func() bool {
		for _, s := range g.Sentinels {
			c := redis.NewSentinelClient(probeOptions(s.Addr()))
			m, err := c.Master(ctx, g.Master).Result()
			_ = c.Close()
			if err != nil || m["num-slaves"] != "1" || m["num-other-sentinels"] != "2" {
				return false
			}
		}
		return true
	})
	return g
}

// Name implements Topology.
func (g *Sentinel) Name() string { return "sentinel" }

// URL is a REDIS_URL naming the sentinels and the master name.
func (g *Sentinel) URL() string {
	u := "redis://" + g.Sentinels[0].Addr() + "/0?master_name=" + g.Master
	for _, s := range g.Sentinels[1:] {
		u += "&addr=" + s.Addr()
	}
	return u
}

func (g *Sentinel) byAddr(addr string) *Server {
	for _, n := range g.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// currentPrimary asks the sentinels which node is the primary now.
func (g *Sentinel) currentPrimary(ctx context.Context) *Server {
	for _, s := range g.Sentinels {
		c := redis.NewSentinelClient(probeOptions(s.Addr()))
		addr, err := c.GetMasterAddrByName(ctx, g.Master).Result()
		_ = c.Close()
		if err == nil && len(addr) == 2 {
			return g.byAddr(addr[0] + ":" + addr[1])
		}
	}
	return nil
}

// PrimaryFor implements Topology: one primary holds every key.
func (g *Sentinel) PrimaryFor(t testing.TB, _ string) *Server {
	t.Helper()
	p := g.currentPrimary(context.Background())
	if p == nil {
		t.Fatalf("redistest: no sentinel names a primary of %s", g.Master)
	}
	return p
}

// WaitPromoted implements Topology.
func (g *Sentinel) WaitPromoted(t testing.TB, candidates []*Server, within time.Duration) (*Server, time.Time) {
	t.Helper()
	ctx := context.Background()
	var promoted *Server
	testwait.Eventually(t, within, "sentinels promote a replica", func() bool {
		p := g.currentPrimary(ctx)
		for _, n := range candidates {
			if p == n && infoField(ctx, n, "replication", "role") == "master" {
				promoted = n
				return true
			}
		}
		return false
	})
	return promoted, time.Now()
}

// ReplicasOf implements Topology.
func (g *Sentinel) ReplicasOf(t testing.TB, primary *Server) []*Server {
	return replicasFromInfo(t, primary, g.byAddr)
}
