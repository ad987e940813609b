package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
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

// TestRedisHookPipelines: a command that fails inside a pipeline is
// counted under its own name, in a plain pipeline and in a batch of
// go-redis's automatic pipeliner (the deferred face the servers use), whose
// results the hook reads once the batch is done; the commands that succeed
// beside it are not.
func TestRedisHookPipelines(t *testing.T) {
	m := metrics.New("test")
	ctx := context.Background()
	opt, err := redis.ParseURL(redistest.URL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	rdb.AddHook(m.RedisHook())
	fails := "return redis.error_reply('ERR refused')"

	cmds, _ := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Eval(ctx, fails, nil)
		p.Eval(ctx, "return 1", nil)
		return nil
	})
	if len(cmds) != 2 || cmds[0].Err() == nil || cmds[1].Err() != nil {
		t.Fatalf("pipeline: %v", cmds)
	}
	ap, err := rdb.AsyncAutoPipelineWithOptions(&redis.AutoPipelineOptions{MaxConcurrentBatches: 4, Unordered: true})
	if err != nil {
		t.Fatal(err)
	}
	var futures []redis.AutoFuture
	for i := range 20 {
		script := "return 1"
		if i%10 == 0 {
			script = fails
		}
		futures = append(futures, ap.Submit(ctx, redis.NewCmd(ctx, "eval", script, 0)))
	}
	failed := 0
	for _, f := range futures {
		if f.Wait() != nil {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("%d of the pipelined scripts failed, want 2", failed)
	}
	want := `
# HELP partnerapi_redis_errors_total Redis commands and dials that failed (not a missing key), by command ("dial" for a connection attempt).
# TYPE partnerapi_redis_errors_total counter
partnerapi_redis_errors_total{command="dial"} 0
partnerapi_redis_errors_total{command="eval"} 3
`
	testwait.Eventually(t, 5*time.Second, "3 failed EVALs counted", func() bool {
		return testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "partnerapi_redis_errors_total") == nil
	})
}

// The metrics handler answers GET /metrics in the text format, with the
// build information (httpserver's TestGroup: nothing else is routed).
func TestHandler(t *testing.T) {
	m := metrics.New("authserver")
	metrics.NewTokenService(m).TokenIssued()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + metrics.Path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
		!strings.Contains(text, "\npartnerapi_tokens_issued_total 1\n") ||
		!strings.Contains(text, `partnerapi_build_info{goversion="go`) || !strings.Contains(text, `service="authserver"`) ||
		!strings.Contains(text, "\ngo_goroutines ") || !strings.Contains(text, "\nprocess_resident_memory_bytes ") {
		t.Errorf("GET /metrics: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), text)
	}
	// Two instances in one process: registries of their own.
	other := metrics.New("authserver")
	if n := testutil.CollectAndCount(other.Registry, "partnerapi_tokens_issued_total"); n != 0 {
		t.Errorf("a fresh registry holds the other instance's counter (%d series)", n)
	}
}

// The credentials checked are counted by method, both series present from
// the start; an unknown method is not a label.
func TestCredentialChecked(t *testing.T) {
	m := metrics.NewTokenService(metrics.New("authserver"))
	want := `
# HELP partnerapi_client_credentials_checked_total Client credentials actually compared against the registry, by method (client_secret, private_key_jwt): a climb without tokens issued is someone guessing; a flat line under a flood of invalid_client or slow_down shows the failure budget refusing them unchecked.
# TYPE partnerapi_client_credentials_checked_total counter
partnerapi_client_credentials_checked_total{method="client_secret"} 0
partnerapi_client_credentials_checked_total{method="private_key_jwt"} 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "partnerapi_client_credentials_checked_total"); err != nil {
		t.Error(err)
	}
	m.CredentialChecked("client_secret")
	m.CredentialChecked("client_secret")
	m.CredentialChecked("private_key_jwt")
	m.CredentialChecked("tls_client_auth")
	want = strings.Replace(want, `"client_secret"} 0`, `"client_secret"} 2`, 1)
	want = strings.Replace(want, `"private_key_jwt"} 0`, `"private_key_jwt"} 1`, 1)
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "partnerapi_client_credentials_checked_total"); err != nil {
		t.Error(err)
	}
}
