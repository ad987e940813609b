package redisconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// DefaultURL is used when REDIS_URL is empty.
const DefaultURL = "redis://127.0.0.1:6379/0"

// Open returns a client for rawURL:
//
//   - redis://[user:pass@]host:port[/db] or rediss://... : one node;
//   - ...?master_name=NAME[&addr=host:port...] : a Sentinel-managed primary,
//     host:port being the sentinels;
//   - redis+cluster://host:port[?addr=host:port...] or any URL with addr=
//     parameters and no master_name: a Cluster seeded with those nodes.
//
// Besides go-redis's own parameters, the URL may carry confirm_replicas and
// confirm_timeout (see Confirmation), which Open ignores. It does not dial;
// Ping and Ready check reachability.
func Open(rawURL string) (redis.UniversalClient, error) {
	if rawURL == "" {
		rawURL = DefaultURL
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("REDIS_URL is not a URL")
	}
	q := u.Query()
	// go-redis refuses parameters it does not know: ours are taken out.
	if _, err := confirmationOf(q, u); err != nil {
		return nil, err
	}
	q.Del(paramConfirmReplicas)
	q.Del(paramConfirmTimeout)
	u.RawQuery = q.Encode()
	rawURL = u.String()
	switch {
	case q.Has("master_name"):
		opt, err := redis.ParseFailoverURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL (sentinel): %w", err)
		}
		tune(q, &opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries, &opt.DialerRetries, &opt.ContextTimeoutEnabled)
		return build("REDIS_URL (sentinel)", func() redis.UniversalClient {
			c := redis.NewFailoverClient(opt)
			c.AddHook(budget{commandBudget(opt.ReadTimeout)})
			return c
		})
	case u.Scheme == "redis+cluster" || u.Scheme == "rediss+cluster" || q.Has("addr"):
		u.Scheme = strings.TrimSuffix(u.Scheme, "+cluster")
		opt, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL (cluster): %w", err)
		}
		tune(q, &opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries, &opt.DialerRetries, &opt.ContextTimeoutEnabled)
		opt.ClusterStateReloadInterval = clusterReloadInterval
		opt.MaintNotificationsConfig = noMaintNotifications()
		return build("REDIS_URL (cluster)", func() redis.UniversalClient {
			cc := redis.NewClusterClient(opt)
			// The reload hook first, so that it wraps budget (see budget).
			cc.AddHook(reloadOnConnError{cc: cc})
			cc.AddHook(budget{commandBudget(opt.ReadTimeout)})
			return cc
		})
	default:
		opt, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		tune(q, &opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries, &opt.DialerRetries, &opt.ContextTimeoutEnabled)
		opt.MaintNotificationsConfig = noMaintNotifications()
		return build("REDIS_URL", func() redis.UniversalClient {
			c := redis.NewClient(opt)
			c.AddHook(budget{commandBudget(opt.ReadTimeout)})
			return c
		})
	}
}

// noMaintNotifications turns off go-redis's maintenance notifications
// (CLIENT MAINT_NOTIFICATIONS, a Redis Cloud/Enterprise feature that open
// source Redis 7 refuses). In its default "auto" mode go-redis tries the
// handshake on every new connection and, on the refusal, rewrites the
// client's options under a lock that a Conn (ConfirmedWrite's dedicated
// connection) does not share: the race detector reports it, and the
// handshake is a wasted round trip per connection anyway.
func noMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// build runs a go-redis constructor, which panics on some option values a URL
// can carry (route_randomly or route_by_latency with master_name, a negative
// pool_size): a bad REDIS_URL must be an error, not a crash.
func build(what string, newClient func() redis.UniversalClient) (rdb redis.UniversalClient, err error) {
	defer func() {
		if r := recover(); r != nil {
			rdb, err = nil, fmt.Errorf("%s: invalid options: %v", what, r)
		}
	}()
	return newClient(), nil
}

// tune sets defaults suited to a request path that must fail fast when
// Redis is gone (a 503 within about a second, not a hung request), unless
// the URL set them: one-second dial, read and write timeouts, one retry
// instead of go-redis's three with backoff, and one dial attempt per try
// instead of go-redis's five (DialerRetries, with 100 ms between them):
// with those, a Redis host that drops packets held every request for about
// 11 s (2 tries x 5 dials x 1 s) instead of 2 s at worst, and a refused
// connection for about 0.8 s instead of a few milliseconds. It also makes
// go-redis honour context deadlines (ContextTimeoutEnabled, which a URL
// cannot turn off): without it, a socket read ignores the context's
// deadline and waits out ReadTimeout, so the command budget (budget)
// could not end a read on a node that does not answer.
func tune(q url.Values, dial, read, write *time.Duration, retries, dialerRetries *int, contextTimeouts *bool) {
	*contextTimeouts = true
	if !q.Has("dial_timeout") {
		*dial = time.Second
	}
	if *read == 0 {
		*read = time.Second
	}
	if *write == 0 {
		*write = time.Second
	}
	if !q.Has("max_retries") {
		*retries = 1
	}
	if !q.Has("dialer_retries") {
		*dialerRetries = 1
	}
}

// Ping checks that Redis answers within timeout. A try that timed out (its
// command budget ran out) is tried again while timeout allows; any other
// error (a refused connection, a bad password) is returned at once.
//
// Why again: a Cluster client's first command discovers the Cluster, and
// go-redis (v9.23, osscluster.go) does it by asking nodes in random order:
// CLUSTER SLOTS of the seeds until one answers (loadState), then COMMAND
// of up to three known nodes, primaries and replicas (cmdsInfo). A node
// that accepts connections but does not answer (a frozen replica, a host
// that drops packets) costs a read timeout (1 s, see tune) each time it is
// picked, and when both picks meet it the first command outlives its
// budget, about 2 s after it started. Measured against a Cluster of 3 + 3
// with one replica frozen, each client pinging once with 3 s: 1 of 24
// fresh clients seeded with all six nodes failed so, and 7, 7 and 10 of 48
// seeded with the frozen replica and one primary (TestPingFrozenReplica's
// URL; none once Ping tried again). A CI run (2026-11-29 01:40 UTC) saw
// `authserver clients rotate-secret` exit "cannot reach Redis" so.
// The failed try leaves what it learned (the slot map, the command table)
// in the client, so the next try asks the nodes that answer.
func Ping(ctx context.Context, rdb redis.UniversalClient, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		err := rdb.Ping(ctx).Err()
		if err == nil || ctx.Err() != nil || !timedOut(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pingPause):
		}
	}
}

// pingPause is Ping's pause between tries.
const pingPause = 20 * time.Millisecond

// timedOut reports whether err is a deadline's: the command budget's
// (context.DeadlineExceeded) or a socket's.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// AutoPipelineOptions are the options of the automatic pipeliner of one
// node that the servers run their per-request scripts through
// (clients.Store.UseAutoPipeline, deploy/docs/configuration.md:
// REDIS_AUTOPIPELINE): the node,
// the Sentinel-managed primary, or each primary of a Cluster (PrimaryPipes).
// They are go-redis's defaults for one caller per command
// (DefaultBlockingAutoPipelineOptions in v9.23: batches of up to 300
// commands and 128 KiB), except:
//
//   - Batches of up to 32 scripts (pipelineBatch). With no flush delay set,
//     go-redis's flusher holds a batch until as many commands as the last
//     batch answered have been sent again, or a silence gap of at least 200
//     µs passes (awaitExpectedArrivals in v9.23's autopipeline.go): it
//     expects callers that send their next command at once, and ours
//     answer an HTTP request first. While it waits, Redis and the servers
//     idle. A batch that fills ends the wait, so smaller batches let Redis
//     run one while the servers answer the last. Measured with the load
//     harness's me, introspect and token scenarios (go run ./deploy/bench
//     --clients 1000 --duration 8s, one node, builds with 32 and with 300
//     alternating): /me's req/s 6-12% higher with 32 (45-48 µs of server
//     CPU per request against 52), introspection's and the token's within
//     the runs' noise. Batches of 16 did no better (/me 70-72% of the
//     harness's Gin + 1 EVALSHA ceiling against 75-79% at 300), and a fixed
//     flush delay, which replaces the wait, cost more CPU than the idle
//     time it freed (1 ns: 103 µs per /me against 63). On a slower machine
//     neither size did better (/me 58.6% and 55.9% of the ceiling,
//     introspection 55.2% and 56.9%, the token 39.1% and 38.5%, medians
//     over eight alternations).
//   - Up to 64 batches may be in flight at once, in no particular order
//     (Unordered). With the default of one, every batch waits for the one
//     before it, and a batch sent to a frozen primary, held for the command
//     budget (budget.ProcessPipelineHook), held every request behind it
//     for as long again. Order does not matter to
//     the servers: each request sends one script and waits for it, so no
//     caller has two commands in flight.
func AutoPipelineOptions() *redis.AutoPipelineOptions {
	o := redis.DefaultBlockingAutoPipelineOptions()
	o.MaxConcurrentBatches = 64
	o.Unordered = true
	o.MaxBatchSize = pipelineBatch
	return o
}

// pipelineBatch is the largest batch of scripts (AutoPipelineOptions says
// why). Until 2026-11-30 a Cluster kept go-redis's 300 on its full-duplex
// pipes, where 32 did worse; the per-primary pipeliners (PrimaryPipes)
// were measured with 32.
const pipelineBatch = 32
