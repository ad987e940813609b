package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// redisNode is one redis-server process of the stack: the single node, or
// a primary or replica of the Cluster.
type redisNode struct {
	proc *process
	addr string
	// role is "node" (the single node), "primary" or "replica".
	role string
	// slots is a primary's slot range ("0-5460"), of: a replica's primary.
	slots, of string
}

// label names the node in the report.
func (n redisNode) label() string {
	switch n.role {
	case "primary":
		return fmt.Sprintf("%s (primary, slots %s)", n.addr, n.slots)
	case "replica":
		return fmt.Sprintf("%s (replica of %s)", n.addr, n.of)
	default:
		return n.addr
	}
}

// describeTopology is the header line naming the Redis topology.
func describeTopology(cfg config) string {
	if cfg.RedisCluster == 0 {
		return "one redis-server without persistence"
	}
	return fmt.Sprintf("Redis Cluster: %s x %s, no persistence (%d redis-server processes)",
		plural(cfg.RedisCluster, "primary", "primaries"), plural(cfg.RedisClusterReplicas, "replica", "replicas"),
		cfg.RedisCluster*(1+cfg.RedisClusterReplicas))
}

// describePipelining says whether the servers pipelined their scripts:
// REDIS_AUTOPIPELINE as given, or unset and what their default (auto) did
// on this topology.
func describePipelining(cfg config) string {
	if !cfg.AutoPipeline.Auto() {
		return "REDIS_AUTOPIPELINE=" + cfg.AutoPipeline.String()
	}
	return "REDIS_AUTOPIPELINE unset (auto: on)"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// nodeClient is a client of one node, for the set-up: one dial attempt
// and no retry, since the set-up's loops poll (go-redis's five dial
// attempts 100 ms apart held each node's first answer 100 ms).
func nodeClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 5 * time.Second, MaxRetries: -1, DialerRetries: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
}

// startCluster starts primaries + primaries*replicas redis-servers in
// cluster mode, without persistence, each in its own directory under dir
// (its nodes.conf there), joins them (CLUSTER MEET), spreads the 16384
// slots evenly over the primaries (CLUSTER ADDSLOTSRANGE), attaches the
// replicas (CLUSTER REPLICATE), and waits until every node reports
// cluster_state:ok and every replica is in sync. It returns the nodes and
// a redis+cluster:// URL naming every primary. On error the nodes started
// are stopped.
func startCluster(ctx context.Context, dir string, primaries, replicas int, logf func(string, ...any)) (nodes []redisNode, url string, err error) {
	defer func() {
		if err != nil {
			for _, n := range nodes {
				n.proc.stop()
			}
			nodes = nil
		}
	}()
	total := primaries * (1 + replicas)
	for i := range total {
		port, err := redistest.ClusterPort()
		if err != nil {
			return nodes, "", err
		}
		name := fmt.Sprintf("redis-%d", i+1)
		ndir := filepath.Join(dir, name)
		if err := os.MkdirAll(ndir, 0o755); err != nil {
			return nodes, "", err
		}
		p, err := startProcess(name, dir, "redis-server", []string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", ndir,
			"--save", "", "--appendonly", "no", "--daemonize", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--repl-diskless-sync-delay", "0",
		}, nil)
		if err != nil {
			return nodes, "", err
		}
		role := "primary"
		if i >= primaries {
			role = "replica"
		}
		nodes = append(nodes, redisNode{proc: p, addr: "127.0.0.1:" + strconv.Itoa(port), role: role})
	}
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = nodeClient(n.addr)
		defer clients[i].Close()
	}
	ids := make([]string, len(nodes))
	deadline := time.Now().Add(10 * time.Second)
	for i, n := range nodes {
		for {
			if n.proc.exited() {
				return nodes, "", fmt.Errorf("%s exited:\n%s", n.proc.name, n.proc.tail())
			}
			id, err := clients[i].Do(ctx, "cluster", "myid").Text()
			if err == nil {
				ids[i] = id
				break
			}
			if time.Now().After(deadline) {
				return nodes, "", fmt.Errorf("%s on %s did not answer: %v\n%s", n.proc.name, n.addr, err, n.proc.tail())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for i, n := range nodes[:primaries] {
		lo, hi := i*clusterSlots/primaries, (i+1)*clusterSlots/primaries-1
		if err := clients[i].Do(ctx, "cluster", "addslotsrange", lo, hi).Err(); err != nil {
			return nodes, "", fmt.Errorf("CLUSTER ADDSLOTSRANGE %d %d on %s: %w", lo, hi, n.addr, err)
		}
		nodes[i].slots = fmt.Sprintf("%d-%d", lo, hi)
	}
	for _, n := range nodes[1:] {
		host, port, _ := net.SplitHostPort(n.addr)
		if err := clients[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			return nodes, "", fmt.Errorf("CLUSTER MEET %s: %w", n.addr, err)
		}
	}
	// A replica can follow its primary once it knows it.
	if err := waitUntil(ctx, 30*time.Second, "every node knows every other", func() (bool, error) {
		for _, c := range clients {
			if v := clusterInfo(ctx, c, "cluster_known_nodes"); v != strconv.Itoa(len(nodes)) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return nodes, "", err
	}
	for r := range replicas {
		for p := range primaries {
			i := primaries + r*primaries + p
			if err := clients[i].Do(ctx, "cluster", "replicate", ids[p]).Err(); err != nil {
				return nodes, "", fmt.Errorf("CLUSTER REPLICATE on %s: %w", nodes[i].addr, err)
			}
			nodes[i].of = nodes[p].addr
		}
	}
	if err := waitUntil(ctx, 60*time.Second, "cluster_state:ok on every node and every replica in sync", func() (bool, error) {
		for i, c := range clients {
			if nodes[i].proc.exited() {
				return false, fmt.Errorf("%s exited:\n%s", nodes[i].proc.name, nodes[i].proc.tail())
			}
			if clusterInfo(ctx, c, "cluster_state") != "ok" {
				return false, nil
			}
			if nodes[i].role == "replica" && infoValue(ctx, c, "replication", "master_link_status") != "up" {
				return false, nil
			}
			if nodes[i].role == "primary" && infoValue(ctx, c, "replication", "connected_slaves") != strconv.Itoa(replicas) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return nodes, "", err
	}
	url = "redis+cluster://" + nodes[0].addr
	sep := "?"
	for _, n := range nodes[1:primaries] {
		url += sep + "addr=" + n.addr
		sep = "&"
	}
	// Without replicas, no operator write could be confirmed by one (the
	// default of a replicated REDIS_URL).
	if replicas == 0 {
		url += sep + "confirm_replicas=0"
	}
	logf("Redis Cluster of %d primaries x %d replica(s) ready: %s", primaries, replicas, url)
	return nodes, url, nil
}

// waitUntil polls cond every 50 ms until it holds, fails, or within passes.
func waitUntil(ctx context.Context, within time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(within)
	for {
		ok, err := cond()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v", what, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterInfo reads one field of CLUSTER INFO ("" when the node does not
// answer).
func clusterInfo(ctx context.Context, c *redis.Client, field string) string {
	text, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return ""
	}
	return infoLine(text, field)
}

// infoValue reads one field of an INFO section ("" when the node does not
// answer).
func infoValue(ctx context.Context, c *redis.Client, section, field string) string {
	text, err := c.Info(ctx, section).Result()
	if err != nil {
		return ""
	}
	return infoLine(text, field)
}

func infoLine(text, field string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// forEachPrimary runs fn on every primary of rdb (a ClusterClient), or on
// rdb itself (a single node's Client).
func forEachPrimary(ctx context.Context, rdb redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	default:
		return fmt.Errorf("unexpected Redis client %T", rdb)
	}
}
