package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// TestStartCluster starts the harness's Cluster (2 primaries x 1 replica),
// writes keys of every shard through the servers' client (its REDIS_URL),
// and checks the harness's per-primary helpers: the memory sum and the
// clearing of rate-limit logs across slots.
func TestStartCluster(t *testing.T) {
	t.Parallel() // it mostly waits on its nodes: beside the proof files' signing
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is not installed (CI=true): %v", err)
		}
		t.Skipf("redis-server is not installed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	nodes, url, err := startCluster(ctx, dir, 2, 1, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, n := range nodes {
			n.proc.stop()
		}
	}()
	var roles []string
	for _, n := range nodes {
		roles = append(roles, n.role)
	}
	if got := strings.Join(roles, ","); got != "primary,primary,replica,replica" {
		t.Errorf("roles = %s", got)
	}
	if nodes[0].slots != "0-8191" || nodes[1].slots != "8192-16383" || nodes[2].of != nodes[0].addr || nodes[3].of != nodes[1].addr {
		t.Errorf("nodes = %+v", nodes)
	}
	if !strings.HasPrefix(url, "redis+cluster://") || strings.Contains(url, "confirm_replicas") || strings.Count(url, "addr=") != 1 {
		t.Errorf("url = %q, want the two primaries, the default confirmation", url)
	}
	rdb, err := redisconn.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Fatalf("REDIS_URL %q opened a %T", url, rdb)
	}
	for i := range 50 {
		id := fmt.Sprintf("c%d", i)
		if err := rdb.Set(ctx, "{"+id+"}:rw:api", 1, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, "{"+id+"}:client", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	perNode := map[string]int64{}
	var mu sync.Mutex
	if err := forEachPrimary(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		n, err := c.DBSize(ctx).Result()
		mu.Lock()
		perNode[c.Options().Addr] = n
		mu.Unlock()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(perNode) != 2 || perNode[nodes[0].addr] == 0 || perNode[nodes[1].addr] == 0 {
		t.Errorf("keys per primary = %v, want both shards used", perNode)
	}
	if used, err := usedMemory(ctx, rdb); err != nil || used < 1<<20 {
		t.Errorf("usedMemory = %d, %v", used, err)
	}
	if err := clearRateLogs(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.DBSize(ctx).Result(); err != nil || n != 50 {
		t.Errorf("DBSize after clearing the rate-limit logs = %d, %v; want the 50 others", n, err)
	}
}
