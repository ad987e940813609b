package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestUnreachable: what a client of Open returns while its Redis is down,
// frozen past the command budget or closed is an outage; a reply to a
// command that cannot work, a missing key, a cancelled request and an
// error that is not Redis's are not.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := open(t, srv.URL()+"?read_timeout=200ms")
	ctx := t.Context()
	key := redistest.Prefix(t, rdb) + "str"
	if err := rdb.Set(ctx, key, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, want bool) {
		t.Helper()
		if err == nil && want {
			t.Errorf("%s: no error", what)
		}
		if got := redisconn.Unreachable(err); got != want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", what, err, got, want)
		}
		if got := redisconn.Unreachable(fmt.Errorf("wrapped: %w", err)); got != want && err != nil {
			t.Errorf("%s wrapped: Unreachable = %v, want %v", what, got, want)
		}
	}
	check("WRONGTYPE", rdb.HGetAll(ctx, key).Err(), false)
	check("script error", rdb.Eval(ctx, "return redis.error_reply('ERR broken')", nil).Err(), false)
	check("missing key", rdb.Get(ctx, key+"-none").Err(), false)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	check("cancelled", rdb.Get(cancelled, key).Err(), false)
	check("not Redis's", errors.New("idempotency record: invalid character"), false)

	srv.Freeze()
	check("frozen", rdb.Get(ctx, key).Err(), true)
	srv.Thaw()
	srv.Kill()
	check("down", rdb.Get(ctx, key).Err(), true)
	_ = rdb.Close()
	check("closed", rdb.Get(ctx, key).Err(), true)
}

// TestUnreachableReplies: the replies of a node that cannot serve for now
// are an outage, every other reply is not (each sent by a real Redis, as
// a script's error reply).
func TestUnreachableReplies(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	// Each reply once: go-redis retries the unreachable ones with its
	// backoff (four seconds of this test's time), which is not what is
	// tested here.
	if c, ok := rdb.(*redis.Client); ok {
		opt := *c.Options()
		opt.MaxRetries = -1
		rdb = redis.NewClient(&opt)
		t.Cleanup(func() { _ = rdb.Close() })
	}
	for reply, want := range map[string]bool{
		"LOADING Redis is loading the dataset in memory":                                   true,
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.": true,
		"READONLY You can't write against a read only replica.":                            true,
		"CLUSTERDOWN The cluster is down":                                                  true,
		"TRYAGAIN Multiple keys request during rehashing of slot":                          true,
		"MOVED 3999 127.0.0.1:6381":                                                        true,
		"ERR max number of clients reached":                                                true,
		"WRONGTYPE Operation against a key holding the wrong kind of value":                false,
		"ERR user_script:1: Script attempted to access nonexistent global variable":        false,
		"NOSCRIPT No matching script. Please use EVAL.":                                    false,
		"OOM command not allowed when used memory > 'maxmemory'.":                          false,
	} {
		err := rdb.Eval(t.Context(), "return redis.error_reply(ARGV[1])", nil, reply).Err()
		if err == nil || redisconn.Unreachable(err) != want {
			t.Errorf("%q: %v: Unreachable %v, want %v", reply, err, redisconn.Unreachable(err), want)
		}
	}
}
