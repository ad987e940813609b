package clients

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

// UseAutoPipeline sends the per-request scripts (Authenticate, AdmitAPI)
// through go-redis's automatic pipelining (the deferred face of its
// AutoPipeliner, with redisconn.AutoPipelineOptions): concurrent requests'
// scripts share one write and one read on a connection, instead of one
// each, which costs the server a third of the client CPU per script
// (deploy/docs/configuration.md: REDIS_AUTOPIPELINE, on by default:
// serveconfig.Pipelining). On
// one node and with Sentinel that is the client's own pipeliner, which
// runs the client's hooks; on a Cluster, one per primary, each on a client
// of its own (redisconn.PrimaryPipes) that runs hooks: pass the hooks
// added to the client (the servers' metrics.RedisHook) that must see the
// pipelined scripts there too. Operator changes keep the plain client:
// they wait for replicas one by one. Call it before the Store is used, and
// Close when done; the client's own pipeliner closes with the client.
//
// go-redis calls the feature experimental; this is what the Store relies on,
// read in go-redis v9.23.0 (go.mod pins it; autopipeline.go) and measured
// by the tests named:
//
//   - Ordering: none is needed. Each request submits one script and waits
//     for its reply before it sends anything else, and a script's EVALSHA,
//     then EVAL after NOSCRIPT (luascript.Script.Submit), come one after the
//     other from the same goroutine. Batches run up to 64 at once per node,
//     unordered (redisconn.AutoPipelineOptions says why).
//   - Errors: each command of a batch gets its own reply or error (a
//     script's error, NOSCRIPT, MOVED) as in any pipeline; a connection that
//     breaks fails the rest of its batch. On one node and with Sentinel,
//     go-redis retries such a batch (MaxRetries); on a Cluster a primary's
//     client does not, and runHot runs each of its scripts again on the
//     Cluster client (redisconn.PrimaryPipes.Failed). Either way a script
//     that had run before the break counts its request twice, as without
//     pipelining; a request that cannot be retried gets the error and its
//     server answers 503 (TestAutoPipelineDroppedConnections).
//   - Cluster: each script goes to the pipeliner of its slot's primary, as
//     the Cluster client's slot map names it; a connection error makes the
//     Cluster client reload that map (TestAutoPipelinePrimaryLost). A
//     script that could not run because its slot was moving or the Cluster
//     was reconfiguring (redisconn.SlotMoving: TRYAGAIN, CLUSTERDOWN, MOVED,
//     ASK) runs again on the plain client (runHot), which follows the
//     redirect, reloads its map and retries it for as long as the move
//     lasts (TestSlotMoveSplitKeys, TestReshard, TestFreeze's other shard).
//   - Context: once queued, a command runs on the pipeliner's own context,
//     not the request's, so neither its deadline nor its cancellation reach
//     it. The caller stops waiting at the command budget and pipeWaitSlack
//     (runHot, luascript.Script.Submit) and is answered 503, and each batch
//     is bounded by redisconn's budget (budget's ProcessPipelineHook), so a
//     frozen or dead primary holds neither a request nor a connection for
//     longer (TestFreeze, TestFailover, TestBudgetAutoPipelinedBatch).
func (s *Store) UseAutoPipeline(hooks ...redis.Hook) error {
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		pipes := redisconn.NewPrimaryPipes(cc, hooks...)
		s.pipe, s.rerun, s.closePipe = pipes, pipes.Failed, pipes.Close
	} else {
		ap, err := s.rdb.AsyncAutoPipelineWithOptions(redisconn.AutoPipelineOptions())
		if err != nil {
			return fmt.Errorf("redis autopipeline: %w", err)
		}
		s.pipe = ap
	}
	s.budget, s.waits = redisconn.CommandBudget(s.rdb), &waitEpochs{}
	return nil
}

// TraceSampled makes a request that is traced (its span records: package
// tracing) run its per-request script on the plain client, whose go-redis
// OpenTelemetry hook (tracing.InstrumentRedis) sees the request's context
// and makes the script's span its child; the pipeliner runs every batch
// on a context of its own. The other requests keep the pipeliner, so a
// 1% sampler moves 1% of the scripts. Call it before the Store is used,
// with tracing on only: off, runHot pays one boolean test for it.
func (s *Store) TraceSampled() { s.traced = true }

// Close releases what UseAutoPipeline opened beside the client (a
// Cluster's primaries' own clients), after the pipeliners sent what they
// held. The client itself stays open: its owner closes it, after this.
func (s *Store) Close() error {
	if s.closePipe == nil {
		return nil
	}
	return s.closePipe()
}

// runHot runs a per-request script: on the plain client, or through the
// pipeliner (s.pipe), whose reply the caller waits for the command budget
// and pipeWaitSlack from now, up to waitEpochLength more, or until its own
// deadline if sooner (luascript.Script.Submit). One the pipeliner could not
// run because its slot was moving or the Cluster was reconfiguring runs
// again on the plain client, where redisconn's budget retries it until it
// runs or its deadline is near: such a reply means the script did not run,
// so it cannot count anything twice. On a Cluster, one whose primary's
// connection broke or was refused runs again there too (s.rerun).
func (s *Store) runHot(ctx context.Context, script *luascript.Script, keys []string, args ...any) *redis.Cmd {
	if s.pipe == nil || s.traced && tracing.Recording(ctx) {
		return script.Run(ctx, s.rdb, keys, args...)
	}
	wait := s.waits.context(s.budget + pipeWaitSlack)
	if d, ok := ctx.Deadline(); ok {
		if w, _ := wait.Deadline(); d.Before(w) {
			wait = ctx // the caller's own deadline comes first
		}
	}
	cmd := script.Submit(wait, s.pipe, keys, args...)
	if err := cmd.Err(); err != nil && (redisconn.SlotMoving(err) || s.rerun != nil && s.rerun(ctx, err)) {
		return script.Run(ctx, s.rdb, keys, args...)
	}
	return cmd
}

// pipeWaitSlack is what a caller of the pipeliner waits beyond the command
// budget. A batch is bounded by the budget from when it is sent
// (redisconn's budget hook), and a script sent alone, refused TRYAGAIN
// while its slot moves, is retried by that hook for the budget and then
// returned: the slack lets that reply reach the caller, which runs the
// script again on the plain client for the rest of the move
// (TestSlotMoveSplitKeys), instead of giving up a moment before it.
// Requests stay within TestFreeze's 2 s.
const pipeWaitSlack = 250 * time.Millisecond

// waitEpochs hands out the contexts that end a caller's wait for the
// pipeliner. One context.WithTimeout per request (its timer and its
// allocations) made an API admission through the pipeliner 5-20% slower in
// BenchmarkAdmitAPIPipelined; the requests that start within the same
// waitEpoch share one instead, whose deadline is the epoch's start, the
// wait and the epoch's length: each waits at least the wait and at most an
// epoch longer.
type waitEpochs struct {
	cur atomic.Pointer[waitEpoch]
}

type waitEpoch struct {
	start time.Time
	ctx   context.Context
	// cancel is never called: the context's timer releases it at its
	// deadline. Kept with it, as go vet wants a cancel kept.
	cancel context.CancelFunc
}

// waitEpochLength is how long an epoch's context is handed out.
const waitEpochLength = 20 * time.Millisecond

// context returns a context whose deadline is at least wait from now, and
// at most wait and waitEpochLength. It carries no value and no caller's
// cancellation: the pipeliner would not honour them anyway.
func (w *waitEpochs) context(wait time.Duration) context.Context {
	now := time.Now()
	if e := w.cur.Load(); e != nil && now.Sub(e.start) < waitEpochLength {
		return e.ctx
	}
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(wait+waitEpochLength))
	w.cur.Store(&waitEpoch{start: now, ctx: ctx, cancel: cancel})
	return ctx
}
