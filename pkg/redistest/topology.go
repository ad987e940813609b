package redistest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/testwait"
)

// Topology is a replicated Redis the way operators run it, started on
// loopback from the Debian packages' redis-server and redis-sentinel.
type Topology interface {
	// Name is "cluster" or "sentinel".
	Name() string
	// URL is the REDIS_URL both servers and the CLI take.
	URL() string
	// PrimaryFor returns the node that is now the primary owning key.
	PrimaryFor(t testing.TB, key string) *Server
	// ReplicasOf returns the replicas now attached to primary (take them
	// before killing it).
	ReplicasOf(t testing.TB, primary *Server) []*Server
	// WaitPromoted waits until one of candidates (the replicas of a killed
	// primary) has been promoted and the topology serves through it (the
	// cluster's state is ok, or the sentinels name it), and returns it with
	// the moment that was first seen.
	WaitPromoted(t testing.TB, candidates []*Server, within time.Duration) (*Server, time.Time)
}

// nodeArgs are the settings of every node of a replicated topology: AOF as
// operators run it, and a replica's first sync that starts at once instead
// of after repl-diskless-sync-delay's 5 s.
var nodeArgs = []string{"--appendonly", "yes", "--appendfsync", "everysec", "--repl-diskless-sync-delay", "0"}

// startNode starts one redis-server of a topology on a port pick chooses,
// with extra args.
func startNode(t testing.TB, pick func(testing.TB) int, args ...string) *Server {
	t.Helper()
	return startFresh(t, pick, append(append([]string{}, nodeArgs...), args...))
}

// requireBinary fails the test under CI when a command is missing and
// skips it elsewhere.
func requireBinary(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: %s is not installed (CI=true): %v", name, err)
		}
		t.Skipf("redistest: %s is not installed: %v", name, err)
	}
}

// infoField reads one field of INFO section from a node ("" when the node
// does not answer).
func infoField(ctx context.Context, s *Server, section, field string) string {
	c := redis.NewClient(probeOptions(s.Addr()))
	defer c.Close()
	info, err := c.Info(ctx, section).Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// Running reports whether the server process is up.
func (s *Server) Running() bool { return s.cmd != nil }

// Cluster is a Redis Cluster of 3 primaries and 3 replicas on loopback.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts a 3 + 3 Cluster (redis-cli --cluster create, as an
// operator would), waits until every slot is served and every replica has
// finished its first sync, and stops it when the test ends. Node timeout
// is 2 s, so a killed primary's replica is promoted a few seconds later.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	requireBinary(t, "redis-server")
	requireBinary(t, "redis-cli")
	c := &Cluster{}
	for range 6 {
		n := startNode(t, clusterPort, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "2000", "--cluster-replica-validity-factor", "0")
		t.Cleanup(n.Kill)
		c.Nodes = append(c.Nodes, n)
	}
	args := []string{"--cluster", "create"}
	for _, n := range c.Nodes {
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx := context.Background()
	testwait.Eventually(t, 30*time.Second, "cluster state ok on every node", func() bool {
		for _, n := range c.Nodes {
			if infoOf(ctx, n, "CLUSTER INFO", "cluster_state") != "ok" {
				return false
			}
		}
		return true
	})
	c.waitReplicasSynced(t)
	return c
}

// infoOf runs a command that answers INFO-style text (CLUSTER INFO) and
// reads one field.
func infoOf(ctx context.Context, s *Server, command, field string) string {
	c := redis.NewClient(probeOptions(s.Addr()))
	defer c.Close()
	parts := strings.Fields(command)
	args := make([]any, len(parts))
	for i, p := range parts {
		args[i] = p
	}
	text, err := c.Do(ctx, args...).Text()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// waitReplicasSynced waits until every running replica's link is up, so a
// primary killed now has an eligible, complete replica.
func (c *Cluster) waitReplicasSynced(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	testwait.Eventually(t, 30*time.Second, "every replica synced", func() bool {
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			if infoField(ctx, n, "replication", "role") == "slave" && infoField(ctx, n, "replication", "master_link_status") != "up" {
				return false
			}
		}
		return true
	})
}

// Name implements Topology.
func (c *Cluster) Name() string { return "cluster" }

// URL is a redis+cluster:// URL seeded with every node.
func (c *Cluster) URL() string {
	u := "redis+cluster://" + c.Nodes[0].Addr()
	sep := "?"
	for _, n := range c.Nodes[1:] {
		u += sep + "addr=" + n.Addr()
		sep = "&"
	}
	return u
}

// byAddr returns the node at addr.
func (c *Cluster) byAddr(addr string) *Server {
	for _, n := range c.Nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// slotOwner asks a running node which node serves key's slot as primary.
func (c *Cluster) slotOwner(ctx context.Context, key string) (*Server, error) {
	slot, err := c.keySlot(ctx, key)
	if err != nil {
		return nil, err
	}
	return c.slotPrimary(ctx, slot)
}

// keySlot asks a running node for key's hash slot.
func (c *Cluster) keySlot(ctx context.Context, key string) (int64, error) {
	var lastErr error
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl := redis.NewClient(probeOptions(n.Addr()))
		slot, err := cl.ClusterKeySlot(ctx, key).Result()
		_ = cl.Close()
		if err == nil {
			return slot, nil
		}
		lastErr = err
	}
	return 0, fmt.Errorf("no node answered: %v", lastErr)
}

// slotPrimary asks a running node which node serves slot as primary.
func (c *Cluster) slotPrimary(ctx context.Context, slot int64) (*Server, error) {
	var lastErr error
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl := redis.NewClient(probeOptions(n.Addr()))
		shards, err := cl.ClusterShards(ctx).Result()
		_ = cl.Close()
		if err != nil {
			lastErr = err
			continue
		}
		for _, sh := range shards {
			for _, r := range sh.Slots {
				if r.Start > slot || slot > r.End {
					continue
				}
				for _, n := range sh.Nodes {
					if n.Role == "master" && n.Health == "online" {
						if owner := c.byAddr(n.IP + ":" + strconv.FormatInt(n.Port, 10)); owner != nil {
							return owner, nil
						}
						return nil, fmt.Errorf("slot %d served by unknown node %s:%d", slot, n.IP, n.Port)
					}
				}
			}
		}
		lastErr = fmt.Errorf("%s names no online primary of slot %d", n.Addr(), slot)
	}
	return nil, fmt.Errorf("no node answered: %v", lastErr)
}

// PrimaryFor implements Topology.
func (c *Cluster) PrimaryFor(t testing.TB, key string) *Server {
	t.Helper()
	s, err := c.slotOwner(context.Background(), key)
	if err != nil {
		t.Fatalf("redistest: owner of %q: %v", key, err)
	}
	return s
}

// WaitPromoted implements Topology.
func (c *Cluster) WaitPromoted(t testing.TB, candidates []*Server, within time.Duration) (*Server, time.Time) {
	t.Helper()
	ctx := context.Background()
	var promoted *Server
	testwait.Eventually(t, within, "a replica promoted", func() bool {
		for _, n := range candidates {
			if n.Running() && infoField(ctx, n, "replication", "role") == "master" &&
				infoOf(ctx, n, "CLUSTER INFO", "cluster_state") == "ok" {
				promoted = n
				return true
			}
		}
		return false
	})
	return promoted, time.Now()
}

// PlannedFailover makes replica its primary's replacement by CLUSTER
// FAILOVER (the coordinated failover an operator runs before maintenance)
// and waits, within, until it is a primary of a cluster in state ok. A
// manual failover the primary does not complete in 5 seconds (Redis's
// CLUSTER_MF_TIMEOUT: a loaded machine delays the offset handshake) is
// dropped by Redis, so it is asked again every 6 seconds.
func (c *Cluster) PlannedFailover(t testing.TB, replica *Server, within time.Duration) {
	t.Helper()
	ctx := context.Background()
	r := redis.NewClient(&redis.Options{Addr: replica.Addr()})
	defer r.Close()
	var asked time.Time
	testwait.Eventually(t, within, "a planned failover to "+replica.Addr(), func() bool {
		if infoField(ctx, replica, "replication", "role") == "master" && infoOf(ctx, replica, "CLUSTER INFO", "cluster_state") == "ok" {
			return true
		}
		if time.Since(asked) > 6*time.Second {
			if err := r.Do(ctx, "cluster", "failover").Err(); err != nil {
				t.Logf("redistest: CLUSTER FAILOVER on %s: %v", replica.Addr(), err)
			}
			asked = time.Now()
		}
		return false
	})
}

// ReplicasOf implements Topology.
func (c *Cluster) ReplicasOf(t testing.TB, primary *Server) []*Server {
	return replicasFromInfo(t, primary, c.byAddr)
}

// replicasFromInfo lists the replicas a primary reports (INFO replication).
func replicasFromInfo(t testing.TB, primary *Server, byAddr func(string) *Server) []*Server {
	t.Helper()
	ctx := context.Background()
	n, _ := strconv.Atoi(infoField(ctx, primary, "replication", "connected_slaves"))
	var out []*Server
	for i := range n {
		v := infoField(ctx, primary, "replication", "slave"+strconv.Itoa(i)) // ip=..,port=..,state=..
		var ip, port string
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch k {
			case "ip":
				ip = val
			case "port":
				port = val
			}
		}
		if s := byAddr(ip + ":" + port); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// Topologies returns a Cluster and a Sentinel group shared by every test of
// the package (they take seconds to start); the package's TestMain runs
// its tests through RunMain, which stops them at the end.
func Topologies(t testing.TB) []Topology {
	t.Helper()
	shared.once.Do(func() {
		// Started under a long-lived holder so that the first test's end
		// does not stop them.
		h := &holder{name: "shared-topologies"}
		defer func() {
			if h.failed {
				shared.err = fmt.Errorf("starting the shared topologies failed:\n%s", strings.Join(h.logs, "\n"))
			}
		}()
		// Both at once: each mostly waits on Redis (a Cluster node turns
		// writable 2 s after it starts, a sentinel greets the others every
		// 2 s). FailNow in a holder ends its goroutine, not the test's.
		var wg sync.WaitGroup
		wg.Go(func() { shared.cluster = StartCluster(h) })
		wg.Go(func() { shared.sentinel = StartSentinel(h) })
		wg.Wait()
		shared.holder = h
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	if shared.skip != "" {
		t.Skip(shared.skip)
	}
	if shared.cluster == nil || shared.sentinel == nil {
		t.Fatalf("redistest: the shared topologies did not start: %s", strings.Join(shared.holder.logs, "\n"))
	}
	return []Topology{shared.cluster, shared.sentinel}
}

var shared struct {
	once     sync.Once
	holder   *holder
	cluster  *Cluster
	sentinel *Sentinel
	err      error
	skip     string
}

// parallelWaits lets twice as many parallel tests run at once as go test
// would (-test.parallel defaults to GOMAXPROCS), unless -test.parallel is
// given: the tests of a package that runs through RunMain spend most of
// their time waiting on Redis or on the processes they started (servers,
// Caddy, Prometheus), which do their work outside the test binary, and on
// two cores two such tests at a time left the cores idle while each waited
// (pkg/clients: 21.1 s with -parallel 2, 15.0 s with 4, 13.8 s with 8;
// authserver 8.9 s and 6.1 s, on 2026-11-28).
func parallelWaits() {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
}

// RunMain runs a package's tests, twice as many parallel tests at once as
// go test's default (parallelWaits), and then stops the shared topologies:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }
func RunMain(m *testing.M) int {
	parallelWaits()
	code := m.Run()
	if shared.holder != nil {
		shared.holder.cleanup()
	}
	return code
}

// holder is the testing.TB of processes that outlive a single test: it
// collects cleanups and logs and runs the cleanups at RunMain's end.
type holder struct {
	testing.TB
	name     string
	mu       sync.Mutex
	cleanups []func()
	logs     []string
	failed   bool
	tmp      []string
}

func (h *holder) Helper()          {}
func (h *holder) Name() string     { return h.name }
func (h *holder) Cleanup(f func()) { h.mu.Lock(); h.cleanups = append(h.cleanups, f); h.mu.Unlock() }
func (h *holder) Logf(f string, a ...any) {
	h.mu.Lock()
	h.logs = append(h.logs, fmt.Sprintf(f, a...))
	h.mu.Unlock()
}
func (h *holder) Errorf(f string, a ...any) {
	h.Logf(f, a...)
	h.mu.Lock()
	h.failed = true
	h.mu.Unlock()
}
func (h *holder) Fatalf(f string, a ...any) { h.Errorf(f, a...); runtime.Goexit() }
func (h *holder) Fatal(a ...any)            { h.Errorf("%s", fmt.Sprint(a...)); runtime.Goexit() }
func (h *holder) Skipf(f string, a ...any) {
	h.mu.Lock()
	shared.skip = fmt.Sprintf(f, a...)
	h.mu.Unlock()
	runtime.Goexit()
}
func (h *holder) Failed() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.failed }
func (h *holder) TempDir() string {
	d, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		h.Fatalf("tempdir: %v", err)
	}
	h.mu.Lock()
	h.tmp = append(h.tmp, d)
	h.mu.Unlock()
	return d
}

func (h *holder) cleanup() {
	h.mu.Lock()
	cs := h.cleanups
	h.cleanups = nil
	h.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
	for _, d := range h.tmp {
		_ = os.RemoveAll(d)
	}
}

// sysProcAttr kills every process a test starts when the test binary dies
// without running its cleanups (a panic, a timeout): nothing is left behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// Signal sends sig to the server process (SIGSTOP and SIGCONT pause and
// resume it, as a hung host would).
func (s *Server) Signal(sig syscall.Signal) {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}
