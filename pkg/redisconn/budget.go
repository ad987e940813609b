package redisconn

import (
	"context"
	"errors"
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

// commandBudget is the budget of a client whose read timeout is read: at
// least DefaultCommandBudget, and half as long again as a URL's longer
// read_timeout, so that one slow read and a retry after it still fit (a
// WAIT of ConfirmedWrite waits up to three quarters of the read timeout).
func commandBudget(read time.Duration) time.Duration {
	return max(DefaultCommandBudget, read+read/2)
}

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
// Why the retries: while a slot is MIGRATING (on its old primary) or
// IMPORTING (on its new one), Redis answers a command with several keys
// TRYAGAIN when some of its keys are on the node and some are not, and
// the new primary does the same after an ASK when any key is missing.
// The token service's script names a key that usually does not exist (the
// presenting address's failure count), so every token and introspection
// request of a moving slot was refused for the whole window. go-redis
// retries TRYAGAIN (shouldRetry in error.go), but only within its four
// attempts, each retried once by the node client, with backoffs of 10 ms
// plus a random share of 20, 40 and 80 ms: a few tens of milliseconds in
// all (the 6 s window gave 503s throughout); ASK it follows
// with ASKING, and MOVED with a reload of the slot map. budget tries the
// command again every 25-50 ms until it runs or the deadline is near:
// redis-cli --cluster reshard keeps a slot's window open for the few
// milliseconds its MIGRATEs take, so a reshard costs latency, not errors.
// TRYAGAIN, ASK, MOVED and CLUSTERDOWN all mean the command did not run,
// so running it again cannot count anything twice.
//
// Hooks run in the order they were added, the first outermost: the reload
// hook of a ClusterClient (reloadOnConnError) is added before budget, so
// it sees the caller's context, not budget's expired one, and still
// reloads the slot map after a timeout.
type budget struct{ d time.Duration }

// tryAgainSteps are the pauses between tries of a command refused because
// its slot is moving; the last repeats.
var tryAgainSteps = []time.Duration{25 * time.Millisecond, 50 * time.Millisecond}

func (b budget) DialHook(next redis.DialHook) redis.DialHook { return next }

func (b budget) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		ctx, cancel := b.bound(ctx)
		defer cancel()
		var moving error
		for try := 0; ; try++ {
			err := next(ctx, cmd)
			if !SlotMoving(err) {
				if moving != nil && errors.Is(err, context.DeadlineExceeded) {
					// The deadline ended go-redis's own backoff: the
					// reply that kept the command from running says more.
					cmd.SetErr(moving)
					return moving
				}
				return err
			}
			moving = err
			pause := tryAgainSteps[min(try, len(tryAgainSteps)-1)]
			if deadline, _ := ctx.Deadline(); time.Until(deadline) < 2*pause {
				return err // no time left for another try
			}
			t := time.NewTimer(pause)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
			cmd.SetErr(nil)
		}
	}
}

// ProcessPipelineHook gives the budget's deadline to a pipeline of scripts
// only (EVALSHA, EVAL) whose context has no deadline: that is a batch of
// go-redis's automatic pipeliner (clients.Store.UseAutoPipeline, README:
// REDIS_AUTOPIPELINE), which runs the per-request scripts of many requests
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

// bound returns ctx with the budget's deadline, or ctx as it is when its
// own deadline comes sooner.
func (b budget) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= b.d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, b.d)
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
