package redisconn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// PrimaryPipes is the automatic pipelining of a Cluster client: each
// script goes to the half-duplex pipeliner of the primary that serves its
// first key's slot (go-redis's own AutoPipeliner, with
// AutoPipelineOptions, of a client of that primary's own), so the scripts
// of concurrent requests share writes and reads per primary, and a frozen
// or dead primary holds only the scripts of its own slots.
//
// Written here because go-redis v9.23 has no such mode. Its Cluster
// pipeliner either runs half-duplex batches over slot ranges that mix the
// commands of every primary (a batch ends when its slowest node answers:
// a frozen primary held the requests of every shard, TestFreeze/cluster)
// or keeps one full-duplex pipe per primary, whose writer sends what it
// finds queued when it wakes: one script per write(2) at the servers'
// concurrency (the load harness on a Cluster, go run ./deploy/bench
// --redis-cluster 3 --redis-cluster-replicas 1, counts each run's system
// calls: the servers' writes were about 2 per request that way against
// 1.1-1.2 here, and Redis's CPU per scripted request 9-15 µs higher), and
// a lost primary's slots stayed unanswered
// until the Cluster client's periodic reload, 8 s and more after its
// replica took over when few other commands ran (TestAutoPipelinePrimaryLost).
//
// Each primary's pipeliner runs on a client of its own (the Cluster's
// options for that node, made once per address), not on the Cluster
// client's node client, because a Cluster runs its hooks around its own
// routing and its node clients run theirs around every command the
// Cluster sends them: hooks on the node clients would count the Cluster's
// commands twice, and without hooks the pipelined scripts would leave the
// servers' metrics. So each primary's client carries:
//
//   - budget, which bounds each batch of scripts (budget's
//     ProcessPipelineHook) as on one node;
//   - the caller's hooks (the servers' metrics.RedisHook), which observe
//     each batch of several as "pipeline" and a script sent alone by its
//     name, and count each failed script by its name, as on one node
//     (clients' TestAutoPipelineClusterHooks);
//   - no retries: a batch whose connection broke fails, and Failed, which
//     the caller asks about each failed script, makes the Cluster client
//     reload its slot map (as reloadOnConnError does for the Cluster's own
//     commands: reading each script's error in a pipeline hook would cost
//     the batch's goroutine a lookup of its id per script) and says
//     whether to run the script again on the Cluster client, which finds
//     the slot's primary anew (TestAutoPipelinePrimaryLost).
//
// Redirects (MOVED, ASK) and TRYAGAIN come back as replies (SlotMoving):
// the caller runs such a script again on the Cluster client, which follows
// them and reloads its map.
//
// A client is kept for each address that was ever a primary here, until
// Close: a primary that failed over usually comes back as a replica, and
// may be promoted again; an address that is gone holds no connection once
// its last one broke.
type PrimaryPipes struct {
	cc    *redis.ClusterClient
	hooks []redis.Hook
	opts  *redis.AutoPipelineOptions
	mu    sync.Mutex // serialises changes to pipes, and Close
	// pipes maps a primary's address to its pipeliner; replaced, never
	// changed in place, so that a lookup takes no lock. nil once closed.
	pipes atomic.Pointer[map[string]*primaryPipe]
}

// primaryPipe is a primary's own client and its pipeliner.
type primaryPipe struct {
	rdb *redis.Client
	ap  *redis.AutoPipeliner
}

// NewPrimaryPipes returns the automatic pipelining of cc, a client of Open:
// one half-duplex pipeliner per primary, on a client of its own created
// when a script first goes there, with budget and hooks. Close closes
// those clients.
func NewPrimaryPipes(cc *redis.ClusterClient, hooks ...redis.Hook) *PrimaryPipes {
	p := &PrimaryPipes{cc: cc, hooks: hooks, opts: AutoPipelineOptions()}
	p.pipes.Store(&map[string]*primaryPipe{})
	return p
}

// Submit queues cmd on the pipeliner of the primary that serves its first
// key and returns its future. cmd must be laid out as EVAL's (name,
// script, number of keys, keys, arguments), as package luascript lays out
// every script it submits, with at least one key. A command that cannot be
// routed (no key, no slot map, PrimaryPipes closed) carries the error, and
// its future, the zero AutoFuture, completed; WaitContext then says so too.
func (p *PrimaryPipes) Submit(ctx context.Context, cmd redis.Cmder) redis.AutoFuture {
	key, ok := firstKey(cmd)
	if !ok {
		cmd.SetErr(fmt.Errorf("redisconn: PrimaryPipes routes EVAL and EVALSHA by their first key; %q has none", cmd.Name()))
		return redis.AutoFuture{}
	}
	node, err := p.cc.MasterForKey(ctx, key)
	if err != nil {
		cmd.SetErr(err)
		return redis.AutoFuture{}
	}
	pipes := p.pipes.Load()
	if pipes == nil {
		cmd.SetErr(redis.ErrClosed)
		return redis.AutoFuture{}
	}
	pp := (*pipes)[node.Options().Addr]
	if pp == nil {
		if pp, err = p.add(node.Options()); err != nil {
			cmd.SetErr(err)
			return redis.AutoFuture{}
		}
	}
	return pp.ap.Submit(ctx, cmd)
}

// add returns the pipeliner of the primary whose node client has the
// options node, created with a client of its own if it has none.
func (p *PrimaryPipes) add(node *redis.Options) (*primaryPipe, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.pipes.Load()
	if old == nil {
		return nil, redis.ErrClosed
	}
	if pp := (*old)[node.Addr]; pp != nil {
		return pp, nil // another request added it first
	}
	opt := *node // the Cluster's options for this node (ClusterOptions.clientOptions)
	if m := opt.MaintNotificationsConfig; m != nil {
		c := *m // not shared with the node client (go-redis clones it per node too)
		opt.MaintNotificationsConfig = &c
	}
	opt.MaxRetries = -1 // Failed decides, and the Cluster client retries
	rdb := redis.NewClient(&opt)
	rdb.AddHook(budget{commandBudget(opt.ReadTimeout)})
	for _, h := range p.hooks {
		rdb.AddHook(h)
	}
	ap, err := rdb.AsyncAutoPipelineWithOptions(p.opts)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	pp := &primaryPipe{rdb: rdb, ap: ap}
	next := maps.Clone(*old)
	next[node.Addr] = pp
	p.pipes.Store(&next)
	return pp, nil
}

// Close closes the primaries' clients, and with them their pipeliners
// (go-redis flushes what they hold first). Scripts submitted after it
// fail with redis.ErrClosed.
func (p *PrimaryPipes) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.pipes.Swap(nil)
	if old == nil {
		return nil
	}
	var errs []error
	for _, pp := range *old {
		errs = append(errs, pp.rdb.Close())
	}
	return errors.Join(errs...)
}

// Failed reports whether a script that failed with err through Submit
// should run again on the Cluster client: its primary's connection broke
// or was refused, or no primary could be found for it, so the slot's
// primary may be elsewhere now. It asks the Cluster client to reload its
// slot map after any error of a connection, a timeout included. A timeout
// is not run again: the node holds the script or answers too slowly, and
// the caller's wait is spent (a frozen primary is answered 503 within the
// budget, TestFreeze). A script whose connection broke may have run; run
// again, it counts its request twice, as go-redis's own retries of a
// broken pipeline do.
func (p *PrimaryPipes) Failed(ctx context.Context, err error) bool {
	if !connectionError(err) { // a closed client's ErrClosed is one too
		return false
	}
	p.cc.ReloadState(ctx)
	return !timedOut(err)
}

// firstKey reads the first key of an EVAL-style command: name, script,
// number of keys, keys, arguments.
func firstKey(cmd redis.Cmder) (string, bool) {
	args := cmd.Args()
	if len(args) < 4 {
		return "", false
	}
	switch n := args[2].(type) {
	case int:
		if n < 1 {
			return "", false
		}
	default:
		return "", false
	}
	key, ok := args[3].(string)
	return key, ok
}
