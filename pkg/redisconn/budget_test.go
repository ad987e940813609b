package redisconn_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// budgetSlack is what a loaded machine may add to the command budget (the
// long suites' bounds, redistest.AtMost).
const budgetSlack = 700 * time.Millisecond

// timeout reports whether err is a timeout's: the command budget's or a
// caller's deadline (context.DeadlineExceeded), or a read's (a net.Error
// that timed out), not go-redis's pool timeout or any other failure.
func timeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// TestBudgetFrozenNode stops a node (SIGSTOP) and sends it more commands at
// once than the pool has connections: every one must fail within the
// command budget (a read, a pool wait and a retry included), and the client
// must work again once the node is continued. Without a clock: every one
// fails as a timeout, none waiting out the pool's own timeout
// (ReadTimeout + 1 s, longer than the budget), and with max_retries=4 the
// error is the budget's deadline (the test's context has none), where
// go-redis's five reads would end in a read's timeout. How soon is the
// long suites' check.
func TestBudgetFrozenNode(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	rdb := open(t, s.URL())
	ctx := t.Context()
	if err := rdb.Set(ctx, "budget", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	s.Freeze()
	defer s.Thaw()
	const n = 50 // the pool has 10 connections per core
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			errs[i] = rdb.Get(ctx, "budget").Err()
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i := range n {
		if !timeout(errs[i]) {
			t.Fatalf("GET on a frozen node: %v, want a timeout", errs[i])
		}
		redistest.AtMost(t, "GET on a frozen node ("+errs[i].Error()+")", took[i], redisconn.DefaultCommandBudget+budgetSlack)
	}
	t.Logf("frozen node: %d GETs failed after %v to %v: %v", n, slices.Min(took), slices.Max(took), errs[0])
	s.Thaw()
	testwait.Eventually(t, 5*time.Second, "a GET after the thaw", func() bool { return rdb.Get(ctx, "budget").Err() == nil })
	// The budget bounds go-redis's own retries too: with max_retries=4
	// (five reads of ReadTimeout, 1 s, without it) a GET still fails
	// within the budget.
	retrying := open(t, s.URL()+"?max_retries=4")
	if err := retrying.Get(ctx, "budget").Err(); err != nil {
		t.Fatal(err)
	}
	s.Freeze()
	start := time.Now()
	err := retrying.Get(ctx, "budget").Err()
	t.Logf("max_retries=4: failed after %v: %v", time.Since(start), err)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("GET with max_retries=4 on a frozen node: %v, want the budget's deadline exceeded", err)
	}
	redistest.AtMost(t, "GET with max_retries=4 on a frozen node", time.Since(start), redisconn.DefaultCommandBudget+budgetSlack)
	s.Thaw()
	testwait.Eventually(t, 5*time.Second, "a GET after the second thaw", func() bool { return rdb.Get(ctx, "budget").Err() == nil })
	// A caller's shorter deadline is kept.
	s.Freeze()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if err := rdb.Get(short, "budget").Err(); !timeout(err) {
		t.Errorf("GET with a 200 ms deadline on a frozen node: %v, want a timeout", err)
	}
	redistest.AtMost(t, "GET with a 200 ms deadline on a frozen node", time.Since(start), 200*time.Millisecond+budgetSlack)
}

// TestBudgetAutoPipelinedBatch: go-redis's automatic pipeliner runs its
// batches on a context of its own, without the callers' deadlines; the
// budget bounds a batch of scripts as it bounds a command. On a frozen node,
// many concurrent scripts through the pipeliner (batches of several, and of
// one) must all fail within the budget, and work again once the node is
// continued. Without a clock: every one fails as a timeout (and returns
// before the thaw); how soon is the long suites' check.
func TestBudgetAutoPipelinedBatch(t *testing.T) {
	t.Parallel()
	s := redistest.StartServer(t)
	rdb := open(t, s.URL())
	ap, err := rdb.AutoPipelineWithOptions(redisconn.AutoPipelineOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	script := func() error { return ap.Eval(ctx, "return 1", nil).Err() }
	if err := script(); err != nil {
		t.Fatal(err)
	}
	s.Freeze()
	defer s.Thaw()
	const n = 50
	var wg sync.WaitGroup
	took := make([]time.Duration, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			errs[i] = script()
			took[i] = time.Since(start)
		}()
	}
	wg.Wait()
	for i := range n {
		if !timeout(errs[i]) {
			t.Fatalf("EVAL through the pipeliner on a frozen node: %v, want a timeout", errs[i])
		}
		redistest.AtMost(t, "EVAL through the pipeliner on a frozen node ("+errs[i].Error()+")", took[i], redisconn.DefaultCommandBudget+budgetSlack)
	}
	t.Logf("frozen node: %d pipelined EVALs failed after %v to %v: %v", n, slices.Min(took), slices.Max(took), errs[0])
	s.Thaw()
	testwait.Until(t, 5*time.Second, "EVAL through the pipeliner after the thaw", script)
}

// twoKeys reads KEYS[1] and names KEYS[2], which does not exist: while its
// slot is moving, Redis refuses it with TRYAGAIN on both nodes (some keys
// present, some missing), as it refuses the token service's script.
var twoKeys = redis.NewScript(`return redis.call('GET', KEYS[1])`)

// TestClusterTryAgain moves a slot on a real Cluster while a script with a
// missing key runs on it in a loop: the slot's window (held open 200 ms on
// each side of the MIGRATE) must cost latency, never an error. Then a slot
// left MIGRATING/IMPORTING longer than the budget must give TRYAGAIN within
// the budget, not hold the caller; through RetryMoving, at the caller's
// deadline, past the command budget.
func TestClusterTryAgain(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	rdb := open(t, c.URL())
	ctx := t.Context()
	present, missing := "{tryagain}:present", "{tryagain}:missing"
	if err := rdb.Set(ctx, present, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	slot := c.KeySlot(t, present)
	from := c.PrimaryFor(t, present)
	var to *redistest.Server
	for _, p := range c.Primaries(t) {
		if p != from {
			to = p
			break
		}
	}

	stop := make(chan struct{})
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		runs    int
		slowest time.Duration
		failed  []error
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				v, err := twoKeys.Run(ctx, rdb, []string{present, missing}).Text()
				took := time.Since(start)
				mu.Lock()
				runs++
				slowest = max(slowest, took)
				if err != nil || v != "x" {
					failed = append(failed, errors.Join(err, errors.New("value "+v)))
				}
				mu.Unlock()
			}
		}()
	}
	ran := func() int {
		mu.Lock()
		defer mu.Unlock()
		return runs
	}
	testwait.Eventually(t, 5*time.Second, "runs before the move", func() bool { return ran() >= 20 })
	m := c.MoveSlot(t, slot, to, 200*time.Millisecond)
	moved := ran()
	testwait.Eventually(t, 5*time.Second, "runs after the move", func() bool { return ran() >= moved+20 })
	close(stop)
	wg.Wait()
	t.Logf("%v: %d runs, slowest %v, %d failed", m, runs, slowest, len(failed))
	for i, err := range failed {
		if i == 3 {
			break
		}
		t.Errorf("script failed during the move: %v", err)
	}
	if slowest < 200*time.Millisecond {
		t.Errorf("slowest run %v: no run met the window", slowest)
	}

	// A window longer than the budget: TRYAGAIN, within the budget.
	src, dst := redis.NewClient(&redis.Options{Addr: to.Addr()}), redis.NewClient(&redis.Options{Addr: from.Addr()})
	defer src.Close()
	defer dst.Close()
	srcID, dstID := src.Do(ctx, "cluster", "myid").Val(), dst.Do(ctx, "cluster", "myid").Val()
	if err := dst.Do(ctx, "cluster", "setslot", slot, "importing", srcID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := src.Do(ctx, "cluster", "setslot", slot, "migrating", dstID).Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := twoKeys.Run(ctx, rdb, []string{present, missing}).Err()
	took := time.Since(start)
	// Through RetryMoving (every script of the platform): tried again past
	// the command budget, until the caller's deadline.
	const callerDeadline = 2500 * time.Millisecond
	short, cancel := context.WithTimeout(ctx, callerDeadline)
	retryStart := time.Now()
	retryErr := redisconn.RetryMoving(short, func(ctx context.Context) error {
		return twoKeys.Run(ctx, rdb, []string{present, missing}).Err()
	})
	retryTook := time.Since(retryStart)
	cancel()
	for _, cl := range []*redis.Client{src, dst} {
		if err := cl.Do(ctx, "cluster", "setslot", slot, "stable").Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("slot left moving: %v after %v", err, took.Round(time.Millisecond))
	if !redis.IsTryAgainError(err) {
		t.Errorf("script on a slot left moving: %v, want TRYAGAIN", err)
	}
	// TRYAGAIN is the budget's end: the hook tries again until then.
	if took < redisconn.DefaultCommandBudget/2 {
		t.Errorf("script on a slot left moving failed after %v, want after about %v", took, redisconn.DefaultCommandBudget)
	}
	redistest.AtMost(t, "script on a slot left moving", took, redisconn.DefaultCommandBudget+budgetSlack)
	t.Logf("slot left moving, RetryMoving with a %v deadline: %v after %v", callerDeadline, retryErr, retryTook.Round(time.Millisecond))
	// The last try may have written its command and then met the deadline
	// before it read the reply (a loaded machine): that read's timeout is
	// answered as it is, since such a command may have run
	// (TestRetryMovingUnsentAtDeadline); any other error is TRYAGAIN.
	var op *net.OpError
	if lateRead := errors.As(retryErr, &op) && op.Op == "read" && op.Timeout(); !redis.IsTryAgainError(retryErr) && !lateRead {
		t.Errorf("RetryMoving on a slot left moving: %v, want TRYAGAIN (or, at the deadline, a read's timeout)", retryErr)
	}
	if retryTook < callerDeadline-300*time.Millisecond {
		t.Errorf("RetryMoving on a slot left moving failed after %v, want at its caller's deadline (%v)", retryTook, callerDeadline)
	}
	redistest.AtMost(t, "RetryMoving on a slot left moving", retryTook, callerDeadline+budgetSlack)
	if v, err := twoKeys.Run(ctx, rdb, []string{present, missing}).Text(); err != nil || v != "x" {
		t.Errorf("script after the slot is stable again: %q, %v", v, err)
	}
}

// TestRetryMovingClusterDown: RetryMoving tries a command that Redis
// refuses with CLUSTERDOWN again within the command budget only, not the
// longer budget of a moving slot (a failover may take seconds, and the
// request is better answered 503 soon); a command outside RetryMoving is
// tried again within the command budget too.
func TestRetryMovingClusterDown(t *testing.T) {
	t.Parallel()
	n := redistest.StartUnassignedNode(t)
	rdb := open(t, n.URL())
	for _, what := range []string{"RetryMoving", "command"} {
		start := time.Now()
		var err error
		if what == "RetryMoving" {
			err = redisconn.RetryMoving(t.Context(), func(ctx context.Context) error { return rdb.Get(ctx, "k").Err() })
		} else {
			err = rdb.Get(t.Context(), "k").Err()
		}
		took := time.Since(start)
		t.Logf("%s on a node that serves no slot: %v after %v", what, err, took.Round(time.Millisecond))
		if err == nil || !strings.HasPrefix(err.Error(), "CLUSTERDOWN ") {
			t.Errorf("%s: %v, want CLUSTERDOWN", what, err)
		}
		if took < redisconn.DefaultCommandBudget/2 {
			t.Errorf("%s: CLUSTERDOWN after %v, want after about %v", what, took, redisconn.DefaultCommandBudget)
		}
		// Not DefaultMoveBudget's 5 s: measured in the long suites only.
		redistest.AtMost(t, what+" on a node that serves no slot", took, redisconn.DefaultCommandBudget+budgetSlack)
	}
}

// TestRetryMovingUnsentAtDeadline: when the last try of a moving slot's
// window cannot even write its command before the deadline (a loaded
// machine starts it late), RetryMoving answers the reply that kept the
// command from running, as when the deadline ends go-redis's own backoff;
// a read that timed out (the command went out and may have run) is
// answered as it is. The refusal is a real CLUSTERDOWN, the timeouts real
// ones of a connection to the same node.
func TestRetryMovingUnsentAtDeadline(t *testing.T) {
	t.Parallel()
	n := redistest.StartUnassignedNode(t)
	plain := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = plain.Close() })
	refused := plain.Get(t.Context(), "k").Err()
	if !redisconn.SlotMoving(refused) {
		t.Fatalf("GET on a node that serves no slot: %v, want CLUSTERDOWN", refused)
	}
	conn, err := net.Dial("tcp", n.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	past := time.Now().Add(-time.Second)
	_ = conn.SetDeadline(past)
	_, writeTimeout := conn.Write([]byte("PING\r\n"))
	_, readTimeout := conn.Read(make([]byte, 16))
	for _, tc := range []struct {
		name string
		last error
		want error
	}{
		{"a write that timed out", writeTimeout, refused},
		{"a read that timed out", readTimeout, readTimeout},
	} {
		if tc.last == nil {
			t.Fatalf("%s: no error from the connection", tc.name)
		}
		tries := 0
		err := redisconn.RetryMoving(t.Context(), func(context.Context) error {
			tries++
			if tries == 1 {
				return refused
			}
			return tc.last
		})
		if tries != 2 || err != tc.want {
			t.Errorf("refused, then %s (%v): %d tries, RetryMoving = %v, want %v", tc.name, tc.last, tries, err, tc.want)
		}
	}
}
