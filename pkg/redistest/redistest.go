package redistest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// URL is the test Redis: REDIS_URL, or the machine's 127.0.0.1:6379.
func URL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Client returns a client to the test Redis. If it does not answer, the test
// fails under CI=true and otherwise runs on an in-process miniredis.
func Client(t testing.TB) redis.UniversalClient {
	t.Helper()
	rdb, err := redisconn.Open(URL())
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if err := redisconn.Ping(context.Background(), rdb, 2*time.Second); err != nil {
		_ = rdb.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: no Redis at %s and CI=true forbids the in-process fallback: %v", URL(), err)
		}
		t.Logf("redistest: no Redis at %s (%v); falling back to in-process miniredis", URL(), err)
		return Miniredis(t)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Miniredis returns a client to a fresh in-process miniredis.
func Miniredis(t testing.TB) redis.UniversalClient {
	t.Helper()
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Backend is a named Redis for a conformance suite.
type Backend struct {
	Name   string
	Client redis.UniversalClient
	// URL is the REDIS_URL the client was opened from ("" for miniredis).
	URL string
}

// Backends returns the real test Redis and an in-process miniredis, so a
// store's conformance suite proves both behave alike.
func Backends(t testing.TB) []Backend {
	return []Backend{{"redis", Client(t), URL()}, {"miniredis", Miniredis(t), ""}}
}

// AllBackends returns Backends and, after them, the shared Cluster and
// Sentinel group (Topologies; the package's TestMain must use RunMain),
// each through a client opened from its REDIS_URL as the servers open it.
func AllBackends(t testing.TB) []Backend {
	t.Helper()
	out := Backends(t)
	for _, top := range Topologies(t) {
		rdb, err := redisconn.Open(top.URL())
		if err != nil {
			t.Fatalf("redistest: open %s: %v", top.URL(), err)
		}
		t.Cleanup(func() { _ = rdb.Close() })
		out = append(out, Backend{Name: top.Name(), Client: rdb, URL: top.URL()})
	}
	return out
}

// Keys lists the keys matching pattern on every primary: SCAN through a
// ClusterClient would see only one node's.
func Keys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var (
		mu  sync.Mutex
		out []string
	)
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			mu.Lock()
			out = append(out, iter.Val())
			mu.Unlock()
		}
		return iter.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		return nil, fmt.Errorf("redistest: cannot scan a %T", rdb)
	}
	slices.Sort(out)
	return slices.Compact(out), err
}

// Prefix returns a key prefix unique to this test and deletes every key
// under it when the test ends.
func Prefix(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := Keys(ctx, rdb, prefix+"*")
		for _, k := range keys {
			rdb.Del(ctx, k)
		}
	})
	return prefix
}

// Server is a redis-server process of the test's own, on a free port.
type Server struct {
	Port int
	Dir  string
	Args []string
	cmd  *exec.Cmd
	// exited is closed when cmd has exited (its Wait returned).
	exited chan struct{}
	t      testing.TB
}

// StartServer starts redis-server on a free loopback port with extra
// arguments (e.g. "--appendonly", "yes"); the test fails if it cannot.
// The server is stopped when the test ends.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redistest: redis-server is not installed (CI=true): %v", err)
		}
		t.Skipf("redistest: redis-server is not installed: %v", err)
	}
	s := startFresh(t, FreePort, args)
	t.Cleanup(func() { s.Kill() })
	return s
}

// startFresh starts a new redis-server with args on a port pick chooses,
// in a new data directory, and waits until it answers. A port is only
// known free when it is checked: when another process took it (or a
// Cluster node's bus port) before redis-server bound it, the server exits
// at once, and startFresh tries again on another port, up to three times.
func startFresh(t testing.TB, pick func(testing.TB) int, args []string) *Server {
	t.Helper()
	var s *Server
	var err error
	for range 3 {
		s = &Server{Port: pick(t), Dir: t.TempDir(), Args: args, t: t}
		if err = s.launch(s.command()); !errors.Is(err, errPortTaken) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Start (re)starts the server on its port and data directory and waits until
// it answers.
func (s *Server) Start() {
	s.t.Helper()
	s.startCommand(s.command())
}

// command is the redis-server command line of s.
func (s *Server) command() *exec.Cmd {
	args := append([]string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--daemonize", "no", "--logfile", filepath.Join(s.Dir, "redis.log"),
	}, s.Args...)
	return exec.Command("redis-server", args...)
}

// startCommand starts cmd (a redis-server or redis-sentinel of s) and waits
// until it answers PING; the test fails if it does not.
func (s *Server) startCommand(cmd *exec.Cmd) {
	s.t.Helper()
	if err := s.launch(cmd); err != nil {
		s.t.Fatal(err)
	}
}

// errPortTaken: the server exited because its port, or its cluster bus
// port, was in use (launch's error wraps it).
var errPortTaken = errors.New("port in use")

// launch starts cmd and waits until it answers PING. It fails at once
// when the process exits (with its log; errPortTaken when it could not
// bind), and after 10 s without an answer (the process is killed).
func (s *Server) launch(cmd *exec.Cmd) error {
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(10 * time.Second)
	for {
		// A client per try: go-redis's pool stops dialling for a second
		// after PoolSize refused dials in a row, which 5 ms tries reach.
		rdb := redis.NewClient(probeOptions(s.Addr()))
		err := rdb.Ping(context.Background()).Err()
		_ = rdb.Close()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			log := s.log()
			if bytes.Contains(log, []byte("Address already in use")) {
				return fmt.Errorf("redistest: %s on %s exited: %w: %s", cmd.Path, s.Addr(), errPortTaken, log)
			}
			return fmt.Errorf("redistest: %s on %s exited (%s): %s", cmd.Path, s.Addr(), cmd.ProcessState, log)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redistest: %s on %s did not answer in 10 s: %s", cmd.Path, s.Addr(), s.log())
		}
	}
}

// log is the server's log file (its start's messages), empty when unreadable.
func (s *Server) log() []byte {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	return b
}

// probeOptions are the options of the short-lived clients that poll a
// node this package started (is it up, what does INFO say), one client per
// try: one dial attempt and no retry, since the poll loop is the retry. go-redis's
// defaults (five dial attempts 100 ms apart, three retries with backoff)
// made every start wait 100 ms for a server that answers in a few (the
// first dial is refused while redis-server starts).
func probeOptions(addr string) *redis.Options {
	return &redis.Options{Addr: addr, DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, MaxRetries: -1, DialerRetries: 1}
}

// Kill stops the server with SIGKILL (a crash) and waits for it to exit. A
// frozen server (Freeze) is continued first.
func (s *Server) Kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// LongEnv is the environment variable that turns on the long suites
// (failover, soak, load-harness checks, long fuzz): README.md's test
// paragraph and deploy/docs/testing.md name it, and .ci/run runs both.
const LongEnv = "LONG_TESTS"

// Long skips the test unless LONG_TESTS=1: it belongs to the long suites,
// kept out of the quick `go test ./...` (deploy/docs/testing.md).
func Long(t testing.TB) {
	t.Helper()
	if os.Getenv(LongEnv) != "1" {
		t.Skipf("long suite: run with %s=1 (see deploy/docs/testing.md)", LongEnv)
	}
}

// init silences go-redis's process-wide logger in every test binary that
// uses this package: the tests stop, kill and freeze Redis processes, and
// each client of the test's own then printed a "failed to dial" line per
// attempt to stderr (thousands in a CI run, burying the failures' own
// output). A server run in process sets its own logger (serverruntime),
// whose records the tests read.
func init() { redisconn.SetLogger(nil) }
