package redisconn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestPrimaryPipes: on a Cluster, each script submitted goes to the primary
// that serves its first key (the key is found there, on that node, and
// every primary got some); a command without a key is refused with an
// error, not routed anywhere; Failed says which errors run a script again
// on the Cluster client; once closed, a script is refused ErrClosed.
func TestPrimaryPipes(t *testing.T) {
	t.Parallel()
	c := redistest.StartCluster(t)
	cc, ok := open(t, c.URL()).(*redis.ClusterClient)
	if !ok {
		t.Fatal("a Cluster URL did not open a ClusterClient")
	}
	pipes := redisconn.NewPrimaryPipes(cc)
	t.Cleanup(func() { _ = pipes.Close() })
	ctx := t.Context()
	eval := func(script string, keys ...string) *redis.Cmd {
		args := []any{"eval", script, len(keys)}
		for _, k := range keys {
			args = append(args, k)
		}
		cmd := redis.NewCmd(ctx, args...)
		if len(keys) > 0 {
			cmd.SetFirstKeyPos(3)
		}
		if err := pipes.Submit(ctx, cmd).WaitContext(ctx); err != nil && cmd.Err() == nil {
			t.Fatalf("the future failed (%v), the command did not", err)
		}
		return cmd
	}
	served := map[string]int{}
	for i := range 30 {
		key := fmt.Sprintf("{pipes-%d}:k", i)
		if err := eval("redis.call('set', KEYS[1], 'v') return 1", key).Err(); err != nil {
			t.Fatalf("a script on %s: %v", key, err)
		}
		owner := c.PrimaryFor(t, key)
		node := redis.NewClient(&redis.Options{Addr: owner.Addr()})
		v, err := node.Get(ctx, key).Result()
		_ = node.Close()
		if err != nil || v != "v" {
			t.Fatalf("GET %s on its primary %s = %q, %v; want the script's write there", key, owner.Addr(), v, err)
		}
		served[owner.Addr()]++
	}
	if len(served) != 3 {
		t.Errorf("30 keys' scripts reached the primaries %v, want all three", served)
	}

	if err := eval("return 1").Err(); err == nil || !strings.Contains(err.Error(), "first key") {
		t.Errorf("a script without a key: %v; want refused for want of a key", err)
	}

	timeout := &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.ErrClosed, true},
		{io.EOF, true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{timeout, false},
		{fmt.Errorf("redis: evalsha: no reply in time: %w", context.DeadlineExceeded), false},
		{context.Canceled, false},
		{redis.Nil, false},
		{redis.ErrPoolTimeout, true},
		{redisError(t, cc, "ERR a script's error"), false},
	} {
		if got := pipes.Failed(ctx, tc.err); got != tc.want {
			t.Errorf("Failed(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}

	if err := pipes.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := eval("return 1", "{pipes-0}:k").Err(); !errors.Is(err, redis.ErrClosed) {
		t.Errorf("a script after Close: %v, want %v", err, redis.ErrClosed)
	}
}

// redisError returns a real reply error of Redis carrying msg, as a script
// that raises it gets it.
func redisError(t *testing.T, cc *redis.ClusterClient, msg string) error {
	t.Helper()
	err := cc.Eval(t.Context(), "return redis.error_reply(ARGV[1])", []string{"{pipes}:e"}, msg).Err()
	var reply redis.Error
	if !errors.As(err, &reply) {
		t.Fatalf("a script's error reply %q came back as %T %v", msg, err, err)
	}
	return err
}
