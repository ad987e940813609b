package metrics_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestRedisHook runs commands against the real Redis through the hook: a
// missing key and go-redis's own NOSCRIPT fallback are answers, a command
// against the wrong type is an error, and a dial to a closed port is one.
func TestRedisHook(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	m := metrics.New("test")
	ctx := context.Background()
	// A client of its own, so that its connections start under the hook:
	// go-redis's connection handshake is no error.
	opt, err := redis.ParseURL(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb = redis.NewClient(opt)
	defer rdb.Close()
	rdb.AddHook(m.RedisHook())

	if err := rdb.Get(ctx, prefix+"missing").Err(); err != redis.Nil {
		t.Fatalf("GET missing: %v", err)
	}
	// A script Redis has never seen: EVALSHA answers NOSCRIPT, go-redis
	// sends EVAL. The nanosecond makes the script new to this Redis.
	script := redis.NewScript("return " + strconv.FormatInt(time.Now().UnixNano(), 10))
	if err := script.Run(ctx, rdb, []string{prefix + "k"}).Err(); err != nil {
		t.Fatalf("script: %v", err)
	}
	rdb.Set(ctx, prefix+"s", "text", time.Minute)
	if err := rdb.Incr(ctx, prefix+"s").Err(); err == nil {
		t.Fatal("INCR of a string succeeded")
	}
	want := `
# HELP partnerapi_redis_errors_total Redis commands and dials that failed (not a missing key), by command ("dial" for a connection attempt).
# TYPE partnerapi_redis_errors_total counter
partnerapi_redis_errors_total{command="dial"} 0
partnerapi_redis_errors_total{command="incr"} 1
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "partnerapi_redis_errors_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Registry, "partnerapi_redis_command_duration_seconds"); n < 5 {
		t.Errorf("%d duration series, want get, evalsha, eval, set, incr", n)
	}

	// Nothing listens on a free port: the dial fails and is counted.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)), MaxRetries: -1, DialerRetries: 1})
	defer dead.Close()
	dead.AddHook(m.RedisHook())
	if err := dead.Ping(ctx).Err(); err == nil {
		t.Fatal("PING of a closed port succeeded")
	}
	// The failed dial, and the PING it failed.
	want = strings.Replace(want, `{command="dial"} 0`, `{command="dial"} 1`, 1) + `partnerapi_redis_errors_total{command="ping"} 1
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "partnerapi_redis_errors_total"); err != nil {
		t.Error(err)
	}
}
