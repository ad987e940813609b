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

// ConfirmedWrite queues one or more writes of key's slot and, after them on
// the same connection to the primary that owns key, waits with WAIT until
// c.Replicas replicas have acknowledged them or c.Timeout has passed; it
// returns how many replicas acknowledged. WAIT counts the replicas that
// have acknowledged every write made on its own connection, so it must run
// there: a keyless WAIT through a ClusterClient goes to a node chosen
// without regard to the key (and a Lua script cannot call WAIT). With
// c.Replicas 0 the writes run alone and 0 is returned.
//
// queue must queue commands on the pipeliner, all of key's slot, and keep
// their Cmd values to read the results.
func ConfirmedWrite(ctx context.Context, rdb redis.UniversalClient, key string, c Confirmation, queue func(redis.Pipeliner)) (int64, error) {
	if c.Replicas == 0 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error { queue(p); return nil })
		return 0, err
	}
	var node *redis.Client
	switch r := rdb.(type) {
	case *redis.ClusterClient:
		primary, err := r.MasterForKey(ctx, key)
		if err != nil {
			return 0, err
		}
		node = primary
	case *redis.Client: // a single node, or a Sentinel-managed primary
		node = r
	default:
		return 0, fmt.Errorf("redisconn: cannot confirm writes through a %T", rdb)
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
	_, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		queue(p)
		// Pipeliner lacks Wait; the command is the same.
		wait = p.Do(ctx, "wait", c.Replicas, slice.Milliseconds())
		return nil
	})
	if err != nil {
		return 0, err
	}
	acks, err := wait.Int64()
	for err == nil && acks < int64(c.Replicas) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		acks, err = conn.Do(ctx, "wait", c.Replicas, max(min(slice, left), time.Millisecond).Milliseconds()).Int64()
	}
	return acks, err
}

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
func Ready(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return rdb.Ping(ctx).Err()
	}
	var (
		mu   sync.Mutex
		down []string
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		if err := node.Ping(ctx).Err(); err != nil {
			mu.Lock()
			down = append(down, node.Options().Addr)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		cc.ReloadState(ctx)
		return err
	}
	if len(down) > 0 {
		cc.ReloadState(ctx)
		slices.Sort(down)
		return fmt.Errorf("redis cluster: primary %s does not answer", strings.Join(down, ", "))
	}
	return nil
}
