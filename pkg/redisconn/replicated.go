package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// URL parameters of ours (go-redis knows none of them).
const (
	paramConfirmReplicas = "confirm_replicas"
	paramConfirmTimeout  = "confirm_timeout"
)

// DefaultConfirmTimeout is how long a credential change waits for its
// replicas before it is reported as not confirmed.
const DefaultConfirmTimeout = 2 * time.Second

// Confirmation is how many replicas must acknowledge a credential change
// (WAIT) before it is reported as done, and for how long to wait.
type Confirmation struct {
	// Replicas: 0 turns confirmation off.
	Replicas int
	Timeout  time.Duration
}

// ConfirmationOf reads a REDIS_URL's confirmation: confirm_replicas=N
// (default 1 on a Sentinel or Cluster URL, where replicas exist; 0 on a
// single node) and confirm_timeout (a Go duration or whole seconds;
// default 2 s).
func ConfirmationOf(rawURL string) (Confirmation, error) {
	if rawURL == "" {
		rawURL = DefaultURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return Confirmation{}, errors.New("REDIS_URL is not a URL")
	}
	return confirmationOf(u.Query(), u)
}

func confirmationOf(q url.Values, u *url.URL) (Confirmation, error) {
	c := Confirmation{Timeout: DefaultConfirmTimeout}
	replicated := q.Has("master_name") || q.Has("addr") || strings.HasSuffix(u.Scheme, "+cluster")
	if replicated {
		c.Replicas = 1
	}
	if v := q.Get(paramConfirmReplicas); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return Confirmation{}, fmt.Errorf("REDIS_URL: %s=%q: must be a whole number from 0 to 100", paramConfirmReplicas, v)
		}
		c.Replicas = n
	}
	if v := q.Get(paramConfirmTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if n, aerr := strconv.Atoi(v); aerr == nil {
			d, err = time.Duration(n)*time.Second, nil
		}
		if err != nil || d <= 0 || d > time.Minute {
			return Confirmation{}, fmt.Errorf("REDIS_URL: %s=%q: must be a duration from 1ms to 1m", paramConfirmTimeout, v)
		}
		c.Timeout = d
	}
	return c, nil
}

// Ack is what the replicas said of a confirmed write.
type Ack struct {
	// Acknowledged is how many replicas acknowledged the writes (WAIT).
	Acknowledged int64
	// Connected is how many replicas the primary had connected when it did
	// not get enough acknowledgements (ROLE); -1 when it was not asked, or
	// could not be read.
	Connected int64
}

// Confirmed reports whether at least c.Replicas replicas acknowledged.
func (a Ack) Confirmed(c Confirmation) bool { return a.Acknowledged >= int64(c.Replicas) }

// Describe says, for an operator, how the replicas answered: "confirmed
// by 0 of the 2 replicas required within 2s; the primary has 1 replica
// connected".
func (a Ack) Describe(c Confirmation) string {
	s := fmt.Sprintf("confirmed by %d of the %d replica(s) required within %v", a.Acknowledged, c.Replicas, c.Timeout)
	switch {
	case a.Connected < 0:
		return s + "; how many replicas the primary has could not be read"
	case a.Connected < int64(c.Replicas):
		return s + fmt.Sprintf("; the primary has only %d replica(s) connected, fewer than required (lower confirm_replicas in REDIS_URL, or bring a replica back)", a.Connected)
	default:
		return s + fmt.Sprintf("; the primary has %d replica(s) connected", a.Connected)
	}
}

// ConfirmedWrite queues one or more writes of key's slot and, after them on
// the same connection to the primary that owns key, waits with WAIT until
// c.Replicas replicas have acknowledged them or c.Timeout has passed; it
// returns how many replicas acknowledged and, when too few did, how many
// the primary has. WAIT counts the replicas that have acknowledged every
// write made on its own connection, so it must run there: a keyless WAIT
// through a ClusterClient goes to a node chosen without regard to the key
// (and a Lua script cannot call WAIT). With c.Replicas 0 the writes run
// alone.
//
// queue must queue commands on the pipeliner, all of key's slot, and keep
// their Cmd values to read the results; it may be called more than once. A
// write that meets a moved slot (MOVED or ASK from the node go-redis named,
// as during a planned CLUSTER FAILOVER), a demoted primary (READONLY) or a
// broken connection (a failover under way) is tried again on the primary
// found afresh, up to primaryMoveTries times within primaryMoveWait: a MOVED
// write did not run, but one on a broken connection may have, so the writes
// must tolerate running twice (the registry's scripts carry a nonce for
// that).
func ConfirmedWrite(ctx context.Context, rdb redis.UniversalClient, key string, c Confirmation, queue func(redis.Pipeliner)) (Ack, error) {
	if c.Replicas == 0 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil })
		return Ack{Connected: -1}, err
	}
	until := time.Now().Add(primaryMoveWait)
	ack, err := confirmedWriteOnce(ctx, rdb, key, c, queue)
	for try := 1; try < primaryMoveTries && err != nil && retryableWriteError(err) && ctx.Err() == nil && time.Now().Before(until); try++ {
		awaitPrimary(ctx, rdb, key, err, until)
		ack, err = confirmedWriteOnce(ctx, rdb, key, c, queue)
	}
	return ack, explainWriteError(err)
}

// primaryMoveTries and primaryMoveWait bound how often and how long a
// confirmed write looks for its key's new primary during a failover.
const (
	primaryMoveTries = 4
	primaryMoveWait  = 5 * time.Second
)

// awaitPrimary gives the client a moment to find the new primary after err.
// A ClusterClient reloads its slot map lazily (ReloadState starts a reload
// unless one is running, which then cools down for 200 ms before the next)
// from a node of its choice, whose own view may lag a failover by a gossip
// round: in a CI run one reload 250 ms after a planned failover still named
// the old primary, and the second try met MOVED again. So when Redis named
// the slot's new primary (MOVED), wait until the slot map names it too,
// asking for a reload every 50 ms, for at most a second; otherwise, and for
// the failover client (which finds the new primary on its next dial through
// Sentinel), wait 250 ms.
func awaitPrimary(ctx context.Context, rdb redis.UniversalClient, key string, err error, until time.Time) {
	pause := func(d time.Duration) bool {
		t := time.NewTimer(min(d, max(time.Until(until), 0)))
		defer t.Stop()
		select {
		case <-t.C:
			return time.Now().Before(until)
		case <-ctx.Done():
			return false
		}
	}
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		pause(250 * time.Millisecond)
		return
	}
	addr, moved := redis.IsMovedError(err)
	if !moved { // ASK (a slot migrating), READONLY, a broken connection
		cc.ReloadState(ctx)
		pause(250 * time.Millisecond)
		return
	}
	for start := time.Now(); time.Since(start) < time.Second; {
		cc.ReloadState(ctx)
		if !pause(50 * time.Millisecond) {
			return
		}
		if primary, err := cc.MasterForKey(ctx, key); err == nil && primary.Options().Addr == addr {
			return
		}
	}
}

func confirmedWriteOnce(ctx context.Context, rdb redis.UniversalClient, key string, c Confirmation, queue func(redis.Pipeliner)) (Ack, error) {
	ack := Ack{Connected: -1}
	var node *redis.Client
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		primary, err := r.MasterForKey(ctx, key)
		if err != nil {
			return ack, err
		}
		node = primary
	case *redis.Client: // a single node, or a Sentinel-managed primary
		node = r
	default:
		return ack, fmt.Errorf("redisconn: cannot confirm writes through a %T", rdb)
	}
	conn := node.Conn()
	defer conn.Close()
	// WAIT blocks for up to its timeout, and a read may take no longer
	// than the client's ReadTimeout (1 s by default here): wait in slices
	// shorter than that, on the one connection that made the writes.
	slice := min(c.Timeout, node.Options().ReadTimeout*3/4)
	if slice <= 0 {
		slice = c.Timeout
	}
	deadline := time.Now().Add(c.Timeout)
	var wait *redis.Cmd
	cmds, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		queue(p)
		// Pipeliner lacks Wait; the command is the same.
		wait = p.Do(ctx, "wait", c.Replicas, slice.Milliseconds())
		return nil
	})
	if err != nil {
		// A queued command's own error reply (a script's) is the caller's
		// to read; a redirect or a broken connection is ours to retry.
		for _, cmd := range cmds {
			if e := cmd.Err(); e != nil && retryableWriteError(e) {
				return ack, e
			}
		}
		if wait == nil || wait.Err() == nil || !retryableWriteError(wait.Err()) {
			return ack, err
		}
		return ack, wait.Err()
	}
	acks, err := wait.Int64()
	for err == nil && acks < int64(c.Replicas) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		acks, err = conn.Do(ctx, "wait", c.Replicas, max(min(slice, left), time.Millisecond).Milliseconds()).Int64()
	}
	ack.Acknowledged = acks
	if err == nil && acks < int64(c.Replicas) {
		ack.Connected = connectedReplicas(ctx, conn)
	}
	return ack, err
}

// connectedReplicas reads, with ROLE on the primary's connection, how many
// replicas it has connected; -1 when it cannot tell.
func connectedReplicas(ctx context.Context, conn *redis.Conn) int64 {
	v, err := conn.Do(ctx, "role").Slice()
	if err != nil || len(v) < 3 {
		return -1
	}
	if role, _ := v[0].(string); role != "master" {
		return -1
	}
	replicas, ok := v[2].([]any)
	if !ok {
		return -1
	}
	return int64(len(replicas))
}

// retryableWriteError reports whether a confirmed write may be tried again
// on a freshly found primary: the slot moved (MOVED, ASK), the node is no
// longer a primary (READONLY), or the connection broke.
func retryableWriteError(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		for _, p := range []string{"MOVED ", "ASK ", "READONLY ", "CLUSTERDOWN ", "TRYAGAIN ", "LOADING "} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true
}

// explainWriteError turns what a failover leaves behind into a sentence an
// operator can act on; Redis's own words ("MOVED 3149 127.0.0.1:7001",
// go-redis's "redis: conn is in a bad state") stay behind it.
func explainWriteError(err error) error {
	if err == nil || !retryableWriteError(err) {
		return err
	}
	return fmt.Errorf("%w: the Redis primary for this change moved or the connection broke (a failover under way?), and trying again on the new primary failed too; wait until the failover is over and run it again (%v)", ErrPrimaryMoved, err)
}

// ErrPrimaryMoved marks a confirmed write that could not reach the primary
// of its key because a failover or a slot migration was under way.
var ErrPrimaryMoved = errors.New("the Redis primary moved")

// clusterReloadInterval bounds how stale a ClusterClient's slot map may get
// without any error (go-redis's default is 60 s): topology changes that
// cause no error, such as a new replica, show within it.
const clusterReloadInterval = 10 * time.Second

// reloadOnConnError asks the ClusterClient to reload its slot map whenever
// a command or pipeline fails for a reason other than a Redis error reply.
// go-redis reloads on MOVED and ASK replies and every
// ClusterStateReloadInterval, but not when the primary of a slot stops
// answering: after a kill -9 and its replica's promotion, a client kept
// dialing the dead address for up to a minute. A refused or timed-out
// connection now triggers a reload (go-redis coalesces them, one at a time
// with a 200 ms pause), so the promoted replica is found within a few
// hundred milliseconds of its promotion.
type reloadOnConnError struct{ cc *redis.ClusterClient }

func (h reloadOnConnError) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h reloadOnConnError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.check(ctx, err)
		return err
	}
}

func (h reloadOnConnError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.check(ctx, err)
		for _, c := range cmds {
			h.check(ctx, c.Err())
		}
		return err
	}
}

func (h reloadOnConnError) check(ctx context.Context, err error) {
	if connectionError(err) && ctx.Err() == nil {
		h.cc.ReloadState(ctx)
	}
}

// connectionError reports whether err is a failure to talk to a node (a
// refused or broken connection, a timeout), not a reply of Redis's.
func connectionError(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		// CLUSTERDOWN and TRYAGAIN mean the map is changing as well.
		msg := reply.Error()
		return strings.HasPrefix(msg, "CLUSTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN")
	}
	return true
}

// Ready checks, within timeout, that every part of Redis this client needs
// answers: the node, the Sentinel-managed primary, or every primary of a
// Cluster. Its error names the shards that do not answer: a Cluster with
// one shard down can still serve the clients of the other shards, but not
// all of them.
//
// On a Cluster, go-redis reloads the slot map before it lists the primaries,
// asking a random node; a frozen node (a stopped replica) would hold that
// reload, and with it every ping, for the whole timeout, and report every
// primary down (seen in TestReplicaNotConfirmed: the edge then dropped every
// server). So the reload gets half the time, after which the current map is
// used, and the pings get the whole timeout.
func Ready(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) error {
	pingCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return rdb.Ping(pingCtx).Err()
	}
	reloadCtx, cancelReload := context.WithTimeout(ctx, timeout/2)
	defer cancelReload()
	var (
		mu   sync.Mutex
		down []string
	)
	err := cc.ForEachMaster(reloadCtx, func(_ context.Context, node *redis.Client) error {
		if err := node.Ping(pingCtx).Err(); err != nil {
			mu.Lock()
			down = append(down, node.Options().Addr)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		cc.ReloadState(pingCtx)
		return err
	}
	if len(down) > 0 {
		cc.ReloadState(pingCtx)
		slices.Sort(down)
		return fmt.Errorf("redis cluster: primary %s does not answer", strings.Join(down, ", "))
	}
	return nil
}
