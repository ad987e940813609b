package redistest

import (
	"context"
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/testwait"
)

// Freeze stops the server process with SIGSTOP, as a hung host, a stalled
// disk or a long pause of the machine would: the kernel still accepts
// connections and their bytes, but nothing is answered until Thaw. Kill
// continues a frozen server before it kills it, so a test's cleanup never
// leaves a stopped process behind.
func (s *Server) Freeze() { s.Signal(syscall.SIGSTOP) }

// Thaw continues a frozen server (SIGCONT).
func (s *Server) Thaw() { s.Signal(syscall.SIGCONT) }

// nodeClient is a client of one node for the helpers' administrative
// commands: no retries, short timeouts.
func nodeClient(s *Server) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr(), DialTimeout: 500 * time.Millisecond, ReadTimeout: 5 * time.Second, MaxRetries: -1})
}

// KeySlot returns key's hash slot, as a node computes it.
func (c *Cluster) KeySlot(t testing.TB, key string) int {
	t.Helper()
	slot, err := c.keySlot(context.Background(), key)
	if err != nil {
		t.Fatalf("redistest: slot of %q: %v", key, err)
	}
	return int(slot)
}

// Primaries returns the running nodes that are primaries now.
func (c *Cluster) Primaries(t testing.TB) []*Server {
	t.Helper()
	var out []*Server
	for _, n := range c.Nodes {
		if n.Running() && infoField(context.Background(), n, "replication", "role") == "master" {
			out = append(out, n)
		}
	}
	return out
}

// SlotMove is what MoveSlot did: the slot, its old and new primary, how
// many keys moved, and when the slot was first marked IMPORTING and when
// the last node was told its new owner (the window in which commands on
// the slot's keys may be answered ASK or TRYAGAIN).
type SlotMove struct {
	Slot          int
	From, To      *Server
	Keys          int
	Opened, Ended time.Time
}

// MoveSlot moves slot from the primary that serves it to primary to, the
// way redis-cli --cluster reshard moves each slot, one step at a time so a
// test can watch the window: CLUSTER SETSLOT IMPORTING on the target,
// MIGRATING on the source, MIGRATE of the slot's keys in batches of 100,
// then SETSLOT NODE on the target, the source and every other primary.
// hold keeps the slot MIGRATING/IMPORTING that long before the keys move
// and again after (redis-cli holds it only as long as the MIGRATEs take).
// While the window is open a multi-key command or script on the slot is
// answered TRYAGAIN when some of its keys are missing on the node it
// reaches (every such command when one of its keys does not exist), and a
// command whose keys have all moved is answered ASK by the source.
func (c *Cluster) MoveSlot(t testing.TB, slot int, to *Server, hold time.Duration) SlotMove {
	t.Helper()
	m := c.OpenSlotMove(t, slot, to)
	time.Sleep(hold)
	for m.Migrate(100) > 0 {
	}
	time.Sleep(hold)
	return m.Finish()
}

// String describes the move.
func (m SlotMove) String() string {
	return fmt.Sprintf("slot %d (%s keys) %s -> %s, window %v", m.Slot, strconv.Itoa(m.Keys), m.From.Addr(), m.To.Addr(),
		m.Ended.Sub(m.Opened).Round(time.Millisecond))
}

// WaitSettled waits until every running node reports the cluster's state
// ok and every running replica has finished its sync: after a freeze, a
// failover or a move, the next fault starts from a healthy cluster.
func (c *Cluster) WaitSettled(t testing.TB, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	testwait.Eventually(t, within, "cluster state ok on every running node", func() bool {
		for _, n := range c.Nodes {
			if n.Running() && infoOf(ctx, n, "CLUSTER INFO", "cluster_state") != "ok" {
				return false
			}
		}
		return true
	})
	c.waitReplicasSynced(t)
}

// WaitSettled waits until the sentinels name a primary that says it is
// one and every other running node is its replica with its link up.
func (g *Sentinel) WaitSettled(t testing.TB, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	testwait.Eventually(t, within, "sentinel group settled", func() bool {
		p := g.currentPrimary(ctx)
		if p == nil || infoField(ctx, p, "replication", "role") != "master" {
			return false
		}
		for _, n := range g.Nodes {
			if n == p || !n.Running() {
				continue
			}
			if infoField(ctx, n, "replication", "master_port") != strconv.Itoa(p.Port) ||
				infoField(ctx, n, "replication", "master_link_status") != "up" {
				return false
			}
		}
		return true
	})
}
