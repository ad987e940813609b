package redisconn

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// PrimaryPipes is the automatic pipelining of a Cluster client: each
// script goes to the half-duplex pipeliner of the primary that serves its
// first key's slot (go-redis's own AutoPipeliner of that node's client,
// with AutoPipelineOptions), so the scripts of concurrent requests share
// writes and reads per primary, and a frozen or dead primary holds only
// the scripts of its own slots.
//
// Written here because go-redis v9.23 has no such mode. Its Cluster
// pipeliner either runs half-duplex batches over slot ranges that mix the
// commands of every primary (a batch ends when its slowest node answers:
// a frozen primary held the requests of every shard, TestFreeze/cluster)
// or keeps one full-duplex pipe per primary, whose writer sends what it
// finds queued when it wakes: one script per write(2) at the servers'
// concurrency (deploy/bench/RESULTS.md, 2026-11-30: the servers' writes
// 1.88-2.03 per request, against 1.12-1.24 here, and Redis's cost per
// script higher the fewer each read carries). Measured with the load
// harness on a 3 x 1 Cluster (four alternating rounds, 2026-11-30 01:48-
// 02:06 UTC): /me at 72.8-81.4% of its ceiling against 63.9-71.3% with
// the full-duplex pipes.
//
// A node client carries none of the Cluster client's hooks (a Cluster
// runs them around its own routing, not per node), so what they do for
// the Cluster's commands is done here and by the caller:
//
//   - Failed reports, for a command that failed through PrimaryPipes,
//     whether to run it again on the Cluster client, and asks that client
//     to reload its slot map after every error of a connection, as
//     reloadOnConnError does for the client's own commands: without it a
//     killed primary's slots kept going to its address until the periodic
//     reload (clusterReloadInterval), after its replica was promoted
//     (TestAutoPipelinePrimaryKilled).
//   - A batch is bounded by the node's socket timeouts (ReadTimeout and
//     WriteTimeout, 1 s by default: tune), not by budget's hook; the caller
//     waits for its reply no longer than the command budget anyway
//     (clients.Store.runHot).
//   - A node client does not retry (go-redis sets a Cluster node's
//     MaxRetries to -1: the Cluster client retries); Failed says when to.
//   - Redirects (MOVED, ASK) and TRYAGAIN come back as replies
//     (SlotMoving): the caller runs such a script again on the Cluster
//     client, which follows them and reloads its map.
//
// The pipeliners are go-redis's, cached by their node clients and closed
// with them (a node the Cluster client drops is closed by it); PrimaryPipes
// only remembers which is which, so that a request does not take the node
// client's lock to find its pipeliner.
type PrimaryPipes struct {
	cc   *redis.ClusterClient
	opts *redis.AutoPipelineOptions
	mu   sync.Mutex // serialises changes to pipes
	// pipes maps a node client to its pipeliner; replaced, never changed
	// in place, so that a lookup takes no lock.
	pipes atomic.Pointer[map[*redis.Client]*redis.AutoPipeliner]
}

// NewPrimaryPipes returns the automatic pipelining of cc: one half-duplex
// pipeliner per primary, created when a script first goes there.
func NewPrimaryPipes(cc *redis.ClusterClient) *PrimaryPipes {
	p := &PrimaryPipes{cc: cc, opts: AutoPipelineOptions()}
	p.pipes.Store(&map[*redis.Client]*redis.AutoPipeliner{})
	return p
}

// Submit queues cmd on the pipeliner of the primary that serves its first
// key and returns its future. cmd must be laid out as EVAL's (name,
// script, number of keys, keys, arguments), as package luascript lays out
// every script it submits, with at least one key. A command that cannot be
// routed (no key, no slot map, a closed node) carries the error, and its
// future, the zero AutoFuture, completed; WaitContext then says so too.
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
	ap := (*p.pipes.Load())[node]
	if ap == nil {
		if ap, err = p.add(node); err != nil {
			cmd.SetErr(err)
			return redis.AutoFuture{}
		}
	}
	return ap.Submit(ctx, cmd)
}

// add returns node's pipeliner, created if it has none, and remembers it.
// A node client of the same address that the Cluster client replaced
// (it closed the old one, and with it its pipeliner) is forgotten.
func (p *PrimaryPipes) add(node *redis.Client) (*redis.AutoPipeliner, error) {
	ap, err := node.AsyncAutoPipelineWithOptions(p.opts)
	if err != nil {
		return nil, err // a closed node client: ErrClosed
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := *p.pipes.Load()
	next := make(map[*redis.Client]*redis.AutoPipeliner, len(old)+1)
	addr := node.Options().Addr
	for n, a := range old {
		if n.Options().Addr != addr {
			next[n] = a
		}
	}
	next[node] = ap
	p.pipes.Store(&next)
	return ap, nil
}

// Failed reports whether a script that failed with err through Submit
// should run again on the Cluster client: its node's connection broke or
// was refused, or its node client was closed (the Cluster client dropped
// the node), so the slot's primary may be elsewhere now. It asks the
// Cluster client to reload its slot map after any error of a connection,
// a timeout included. A timeout is not run again: the node holds the
// script or answers too slowly, and the caller's wait is spent (a frozen
// primary is answered 503 within the budget, TestFreeze). A script whose
// connection broke may have run; run again, it counts its request twice,
// as go-redis's own retries of a broken pipeline do.
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
