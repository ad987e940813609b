package clients

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// UseAutoPipeline sends the per-request scripts (Authenticate, AdmitAPI)
// through go-redis's automatic pipelining (the blocking face of
// redis.UniversalClient's AutoPipelineWithOptions, with
// redisconn.AutoPipelineOptions): concurrent requests' scripts share one
// write and one read on a connection, instead of one each, which costs the
// server a third of the client CPU per script (README: REDIS_AUTOPIPELINE;
// by default on with one node, off with Sentinel and on a Cluster:
// serveconfig.Pipelining says why). Operator changes keep the plain client: they wait for
// replicas one by one. Call it before the Store is used; the pipeliner
// closes with the client.
//
// go-redis calls the feature experimental; this is what the Store relies on,
// read in go-redis v9.23.0 (go.mod pins it; autopipeline.go, osscluster.go)
// and measured by the tests named:
//
//   - Ordering: none is needed. Each request sends one script and waits for
//     its answer (the blocking face), and a script's EVALSHA, then EVAL
//     after NOSCRIPT (redis.Script.Run), come one after the other from the
//     same goroutine; batches run up to 64 at once, unordered.
//   - Errors: each command of a batch gets its own reply or error (a
//     script's error, NOSCRIPT, MOVED) as in any pipeline; a connection that
//     breaks fails the rest of its batch, which go-redis retries
//     (MaxRetries): a script that had run before the break counts its
//     request twice, as without pipelining; a request it cannot retry gets
//     the error and its server answers 503 (TestAutoPipelineDroppedConnections).
//   - Cluster: batches are split by node (ClusterClient.processPipeline);
//     MOVED and ASK are followed per command, with a reload of the slot map
//     after MOVED, up to MaxRedirects; TRYAGAIN is retried by go-redis only
//     for the first command of a node's batch; a script the pipeliner could
//     not run because its slot was moving or the Cluster was reconfiguring
//     (redisconn.SlotMoving: TRYAGAIN, CLUSTERDOWN, a MOVED or ASK left
//     over) runs again on the plain client (runHot), whose command budget
//     retries it (TestReshard, TestFreeze's other shard).
//   - Context: once queued, a command runs on the pipeliner's own context,
//     not the request's, so neither its deadline nor its cancellation reach
//     it. redisconn's budget bounds a batch of scripts itself (budget's
//     ProcessPipelineHook): a frozen or dead primary fails the batch within
//     the command budget and its requests are answered 503 (TestFreeze,
//     TestFailover, TestBudgetAutoPipelinedBatch). Not yet enough on a
//     Cluster: a batch split over several nodes ends when its slowest node
//     answers, so the other shards' scripts in a batch with a frozen
//     primary's wait with them (TestFreeze/cluster fails at times; README:
//     REDIS_AUTOPIPELINE).
func (s *Store) UseAutoPipeline() error {
	ap, err := s.rdb.AutoPipelineWithOptions(redisconn.AutoPipelineOptions())
	if err != nil {
		return fmt.Errorf("redis autopipeline: %w", err)
	}
	s.hot = ap
	return nil
}

// runHot runs a per-request script through the pipeliner (s.hot). One the
// pipeliner could not run because its slot was moving or the Cluster was
// reconfiguring runs again on the plain client, where redisconn's budget
// retries it until it runs or its deadline is near: such a reply means the
// script did not run, so it cannot count anything twice.
func (s *Store) runHot(ctx context.Context, script *luascript.Script, keys []string, args ...any) *redis.Cmd {
	cmd := script.Run(ctx, s.hot, keys, args...)
	if s.hot != redis.Scripter(s.rdb) && redisconn.SlotMoving(cmd.Err()) {
		return script.Run(ctx, s.rdb, keys, args...)
	}
	return cmd
}
