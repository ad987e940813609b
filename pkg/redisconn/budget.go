package redisconn

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultCommandBudget bounds how long one command may take through a
// client of Open, everything included: the wait for a pooled connection,
// dialing, writing, reading, go-redis's own retries and redirects, and
// budget's retries of TRYAGAIN. Each request of either
// server makes one Redis round trip, so a request whose Redis stalls is
// answered 503 with Retry-After about this long after it arrived.
const DefaultCommandBudget = 1500 * time.Millisecond

// CommandBudget is the command budget of rdb, a client of Open: what its
// budget hook bounds each command by (commandBudget of its read timeout).
// A caller that waits for a command some other way (clients.Store's
// automatic pipeliner, whose batches run on a context of their own) waits
// no longer than this. Other clients get DefaultCommandBudget.
func CommandBudget(rdb redis.UniversalClient) time.Duration {
	switch c := rdb.(type) {
	case *redis.Client:
		return commandBudget(c.Options().ReadTimeout)
	case *redis.ClusterClient:
		return commandBudget(c.Options().ReadTimeout)
	}
	return DefaultCommandBudget
}

// commandBudget is the budget of a client whose read timeout is read: at
// least DefaultCommandBudget, and half as long again as a URL's longer
// read_timeout, so that one slow read and a retry after it still fit (a
// WAIT of ConfirmedWrite waits up to three quarters of the read timeout).
func commandBudget(read time.Duration) time.Duration {
	return max(DefaultCommandBudget, read+read/2)
}

// DefaultMoveBudget bounds how long RetryMoving (every Lua script of the
// platform, through package luascript) tries again a command that Redis
// refused because its slot is moving between primaries. It is longer than
// DefaultCommandBudget on purpose: a refusal is an answer, so Redis is up,
// and a reshard that moves a slot's keys one MIGRATE at a time keeps the
// slot's keys split for as long as its MIGRATEs take (1-2 s measured for a
// client's keys moved 0.2-0.4 s apart: issue 27); a request held through
// such a move is answered when it ends instead of 503.
const DefaultMoveBudget = 5 * time.Second

// budget is the hook that gives every command of a client a deadline (its
// own, unless the caller's comes sooner) and retries, inside it, the
// commands Redis refused because their slot is moving.
//
// Why a deadline of ours: go-redis (v9.23) bounds each read by ReadTimeout
// but not a command as a whole. On a Cluster, ClusterClient.process
// (osscluster.go) tries a command up to MaxRedirects+1 = 4 times, and
// retries a timeout on the same node once and then on the slot's primary
// again (MarkAsFailing does not change a primary's routing); each of those
// tries is the node client's Process, which retries once more
// (max_retries=1, see tune). Against a frozen primary (SIGSTOP: the
// kernel accepts the connections, nothing answers) that is up to 8 reads
// of 1 s plus backoffs, and the requests behind them wait for one of the
// node pool's connections (5 per core) for PoolTimeout (ReadTimeout + 1 s):
// requests were held 4.1-9.8 s, and until SIGCONT for a longer freeze
// (TestFreeze measured up to 5.7 s in a 5 s freeze). A context deadline
// ends all of it: Options.ContextTimeoutEnabled (set by tune)
// makes go-redis cap every socket deadline at the context's
// (pool.Conn.deadline), the pool wait (ConnPool.waitTurn) and the retry
// sleeps (internal.Sleep) end with the context, and the cluster loop
// returns the context's error.
//
// Why the retries: see RetryMoving. A command outside RetryMoving is
// retried by the hook within the command budget only (single-key commands
// never meet TRYAGAIN, and go-redis follows ASK and MOVED itself); inside
// RetryMoving (a script) the hook bounds each try by the command budget and
// leaves the retrying to RetryMoving. go-redis's automatic pipeliner runs a
// command it sends alone on a background context (autopipeline.go), which
// loses RetryMoving's mark and deadline: such a try is retried by the hook
// within the command budget, then by RetryMoving.
//
// Hooks run in the order they were added, the first outermost: the reload
// hook of a ClusterClient (reloadOnConnError) is added before budget, so
// it sees the caller's context, not budget's expired one, and still
// reloads the slot map after a timeout.
type budget struct{ d time.Duration }

func (b budget) DialHook(next redis.DialHook) redis.DialHook { return next }

func (b budget) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if end, ok := ctx.Value(retryingKey{}).(time.Time); ok {
			// A try of RetryMoving: bounded by the budget and by the end
			// of RetryMoving's window, with one deadline.
			ctx, cancel := within(ctx, min(b.d, time.Until(end)))
			defer cancel()
			return next(ctx, cmd)
		}
		// Not a try of RetryMoving: the budget is this command's deadline,
		// set here (retryMoving only carries its window's end as a mark,
		// which a hook further in would read, not this one).
		ctx, cancel := within(ctx, b.d)
		defer cancel()
		err := retryMoving(ctx, b.d, b.d, func(ctx context.Context) error {
			cmd.SetErr(nil)
			return next(ctx, cmd)
		})
		if err != nil {
			cmd.SetErr(err)
		}
		return err
	}
}

// retryingKey marks the context of a try of RetryMoving; its value is the
// time.Time at which RetryMoving's window ends (the caller's deadline if
// sooner).
type retryingKey struct{}

// RetryMoving calls try until it returns something other than a reply of
// Redis's saying that the command was not run because its slot is moving
// (TRYAGAIN, ASK or MOVED left over when go-redis gave up following
// redirects; see SlotMoving), for at most DefaultMoveBudget or until ctx's
// deadline, whichever comes first, with exponential backoff and jitter
// between tries (tryAgainPause). It returns try's last error: the moving
// reply itself when the deadline ended the last try. CLUSTERDOWN (no
// primary serves the slot, as while a failover is under way) is retried
// within DefaultCommandBudget only: it can last as long as a failover
// does, and a request is better answered 503 with Retry-After soon.
//
// While a slot is MIGRATING (on its old primary) or IMPORTING (on its new
// one), Redis answers a command with several keys TRYAGAIN when some of
// its keys are on the node and some are not, and the new primary does the
// same after an ASK when any key is missing (redistest.SlotMigration). The
// token service's script names a key that usually does not exist (the
// presenting address's failure count), so every token and introspection
// request of a moving slot is refused for the whole window, which a
// reshard moving keys one by one keeps open for seconds. go-redis retries
// TRYAGAIN (shouldRetry in error.go), but only within its MaxRedirects+1 =
// 4 attempts (ClusterClient.process, osscluster.go), each retried once by
// the node client (max_retries=1, see tune), with backoffs of 10 ms plus a
// random share of 20, 40 and 80 ms (internal.RetryBackoff with the
// default MinRetryBackoff): a few tens of milliseconds in all; and when its
// automatic pipeliner sends several commands in one pipeline it does not
// wait at all (the budget hook does not retry pipelines). Raising
// MaxRedirects would stretch every redirect loop, MOVED included, and still
// not cover a window measured in seconds, so the retry is here, in one
// place that every script goes through (luascript.Script.Run).
//
// Why it is safe: TRYAGAIN, ASK, MOVED and CLUSTERDOWN are answered before
// the command runs (Redis's getNodeByQuery refuses it before any key is
// touched), so a script refused that way did nothing, and running it again
// cannot count a request twice or write anything twice. Any other error
// (a broken connection, a timeout, the script's own error) is returned as
// it is: such a script may have run.
//
// try must use the context it is given: it marks the try, with the
// window's end, so that the budget hook of a client of Open bounds it by
// the command budget and that end without retrying it again. (A client
// without the hook bounds a try by the caller's deadline only; RetryMoving
// still stops trying at the window's end.)
func RetryMoving(ctx context.Context, try func(context.Context) error) error {
	return retryMoving(ctx, DefaultMoveBudget, DefaultCommandBudget, try)
}

// retryMoving is RetryMoving with its window and the command budget that
// bounds the retries of CLUSTERDOWN.
func retryMoving(ctx context.Context, window, stall time.Duration, try func(context.Context) error) error {
	start := time.Now()
	// The window's end travels as the mark's value, not as a deadline of
	// its own: the budget hook sets one deadline per try from both (a
	// context.WithTimeout per script here too was 3% of an introspection's
	// server CPU in its CPU profile under load: go run ./deploy/bench
	// --scenarios introspect --profiles DIR).
	deadline := start.Add(window)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	ctx = context.WithValue(ctx, retryingKey{}, deadline)
	var moving error
	for n := 0; ; n++ {
		err := try(ctx)
		if !SlotMoving(err) {
			if moving != nil && (errors.Is(err, context.DeadlineExceeded) || unsent(err)) {
				// The deadline ended go-redis's own backoff, or came
				// before the try's command went out: the reply that
				// kept the command from running says more.
				return moving
			}
			return err
		}
		moving = err
		end := deadline
		if stalled := start.Add(stall); clusterDown(err) && stalled.Before(end) {
			end = stalled
		}
		pause := tryAgainPause(n)
		if time.Until(end) < 2*pause {
			return err // no time left for another try
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// unsent reports whether err is a write that timed out: the try's deadline
// came before its command was written whole (on a loaded machine the last
// try of a window can start after the window's end), so Redis, which runs
// no command it has not read whole, did not run it (go-redis closes the
// connection after the error). A read that timed out is not unsent: its
// command was written and may have run.
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "write" && op.Timeout()
}

// tryAgainPause is the pause after the nth refused try (from 0): a step
// that doubles from 10 ms up to 160 ms, half of it fixed and half random, so
// that the requests held by one move do not all try again at once, and a
// request waits at most about 160 ms after the move ends.
func tryAgainPause(n int) time.Duration {
	step := tryAgainFirst << min(n, 4)
	return step/2 + rand.N(step/2+1)
}

// tryAgainFirst is the first step of tryAgainPause.
const tryAgainFirst = 10 * time.Millisecond

// ProcessPipelineHook gives the budget's deadline to a pipeline of scripts
// only (EVALSHA, EVAL) whose context has no deadline: that is a batch of
// go-redis's automatic pipeliner (clients.Store.UseAutoPipeline,
// deploy/docs/configuration.md: REDIS_AUTOPIPELINE), which runs the per-request scripts of many requests
// on a context of its own, without their deadlines (AutoPipeliner's doc in
// go-redis v9.23: "a per-command deadline or cancellation is therefore not
// honored once the command is queued"). Without it, a batch sent to a
// frozen primary was held by go-redis's retries and redirects for as long
// as the freeze (5 s in TestFreeze), and with it every request whose
// script shared the batch, or waited behind it, on a Cluster those of the
// other shards too. Bounded, the batch fails within the budget and its
// requests are answered 503, as a single command's would be. A batch of one
// command goes through ProcessHook above instead, retries of TRYAGAIN
// included; a batch of several is retried by go-redis's own redirect loop
// (ClusterClient.processPipeline), within the deadline.
//
// Every other pipeline is left as it is: no request of either server makes
// one but ClientKeys' two reads (the operator's listings and confirmed
// writes do), a listing of a large registry may take longer than a
// request's budget, and go-redis reads all of a pipeline's replies within
// one ReadTimeout already.
func (b budget) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if _, ok := ctx.Deadline(); ok || !scriptsOnly(cmds) {
			return next(ctx, cmds)
		}
		ctx, cancel := context.WithTimeout(ctx, b.d)
		defer cancel()
		return next(ctx, cmds)
	}
}

// scriptsOnly reports whether every command of cmds runs a script.
func scriptsOnly(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		switch c.Name() {
		case "evalsha", "eval", "evalsha_ro", "eval_ro":
		default:
			return false
		}
	}
	return len(cmds) > 0
}

// within returns ctx with a deadline d from now, or ctx as it is when its
// own deadline comes sooner.
func within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// SlotMoving reports whether err is a reply of Redis's saying that the
// command was not run because its slot is being moved or the cluster is
// reconfiguring: TRYAGAIN, ASK or MOVED left over when go-redis gave up
// following redirects, CLUSTERDOWN.
func SlotMoving(err error) bool {
	if err == nil {
		return false // every command that ran: no allocation on this path
	}
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	for _, prefix := range []string{"TRYAGAIN ", "ASK ", "MOVED ", "CLUSTERDOWN "} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// clusterDown reports whether err is Redis's CLUSTERDOWN reply.
func clusterDown(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "CLUSTERDOWN ")
}
