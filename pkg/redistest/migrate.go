package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlotMigration is a slot move a test drives one step at a time: opened by
// Cluster.OpenSlotMove (the slot IMPORTING on its new primary, MIGRATING on
// its old one), its keys moved by Migrate in batches of the test's choosing,
// ended by Finish (SETSLOT NODE everywhere). Between Open and Finish the
// slot's keys may be split between the two primaries: a multi-key command
// or script on the slot is then answered TRYAGAIN by either node.
type SlotMigration struct {
	t            testing.TB
	c            *Cluster
	move         SlotMove
	src, dst     *redis.Client
	srcID, dstID string
}

// OpenSlotMove starts moving slot from the primary that serves it to the
// primary to: CLUSTER SETSLOT IMPORTING on to, then MIGRATING on the
// source, as redis-cli --cluster reshard does. The test must call Finish.
func (c *Cluster) OpenSlotMove(t testing.TB, slot int, to *Server) *SlotMigration {
	t.Helper()
	ctx := context.Background()
	from, err := c.slotPrimary(ctx, int64(slot))
	if err != nil {
		t.Fatalf("redistest: owner of slot %d: %v", slot, err)
	}
	if from == to {
		t.Fatalf("redistest: slot %d is served by %s already", slot, to.Addr())
	}
	m := &SlotMigration{t: t, c: c, src: nodeClient(from), dst: nodeClient(to)}
	t.Cleanup(func() {
		_ = m.src.Close()
		_ = m.dst.Close()
	})
	id := func(cl *redis.Client) string {
		v, err := cl.Do(ctx, "cluster", "myid").Text()
		if err != nil {
			t.Fatalf("redistest: CLUSTER MYID on %s: %v", cl.Options().Addr, err)
		}
		return v
	}
	m.srcID, m.dstID = id(m.src), id(m.dst)
	m.move = SlotMove{Slot: slot, From: from, To: to, Opened: time.Now()}
	m.step(m.dst, "cluster", "setslot", slot, "importing", m.srcID)
	m.step(m.src, "cluster", "setslot", slot, "migrating", m.dstID)
	return m
}

func (m *SlotMigration) step(cl *redis.Client, args ...any) {
	m.t.Helper()
	if err := cl.Do(context.Background(), args...).Err(); err != nil {
		m.t.Fatalf("redistest: %v on %s: %v", args, cl.Options().Addr, err)
	}
}

// Migrate moves up to n of the slot's keys still on the source to the new
// primary with one MIGRATE and returns how many it moved (0: none left).
func (m *SlotMigration) Migrate(n int) int {
	m.t.Helper()
	keys, err := m.src.ClusterGetKeysInSlot(context.Background(), m.move.Slot, n).Result()
	if err != nil {
		m.t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %v", m.move.Slot, m.move.From.Addr(), err)
	}
	if len(keys) == 0 {
		return 0
	}
	args := []any{"migrate", "127.0.0.1", m.move.To.Port, "", 0, 5000, "keys"}
	for _, k := range keys {
		args = append(args, k)
	}
	m.step(m.src, args...)
	m.move.Keys += len(keys)
	return len(keys)
}

// Finish moves the keys still on the source (batches of 100), then tells the
// new primary, the old one and every other primary the slot's new owner
// (SETSLOT NODE), which closes the window.
func (m *SlotMigration) Finish() SlotMove {
	m.t.Helper()
	for m.Migrate(100) > 0 {
	}
	m.step(m.dst, "cluster", "setslot", m.move.Slot, "node", m.dstID)
	m.step(m.src, "cluster", "setslot", m.move.Slot, "node", m.dstID)
	for _, p := range m.c.Primaries(m.t) {
		if p == m.move.From || p == m.move.To {
			continue
		}
		cl := nodeClient(p)
		m.step(cl, "cluster", "setslot", m.move.Slot, "node", m.dstID)
		_ = cl.Close()
	}
	m.move.Ended = time.Now()
	return m.move
}

// MoveSlotKeyByKey moves slot to the primary to the way a slow reshard
// tool does: one MIGRATE per key, pause() apart (also before the first and
// after the last), so the slot's keys stay split for about pause() times
// its keys + 1.
func (c *Cluster) MoveSlotKeyByKey(t testing.TB, slot int, to *Server, pause func() time.Duration) SlotMove {
	t.Helper()
	m := c.OpenSlotMove(t, slot, to)
	time.Sleep(pause())
	for m.Migrate(1) > 0 {
		time.Sleep(pause())
	}
	return m.Finish()
}

// StartUnassignedNode starts one cluster-enabled redis-server that serves
// no slot, so that it answers every command on a key CLUSTERDOWN ("Hash
// slot not served"), as every node of a Cluster does while a slot has no
// primary (a failover under way). Reach it with a single-node client (its
// URL). It is stopped when the test ends.
func StartUnassignedNode(t testing.TB) *Server {
	t.Helper()
	requireBinary(t, "redis-server")
	n := startNode(t, clusterPort, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	t.Cleanup(n.Kill)
	return n
}
