package serverruntime_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/dpopnonce"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
	"github.com/partnerapi/authplatform/pkg/serverruntime"
)

// config is a valid shared configuration on free loopback ports.
func config(redisURL, prefix string) serveconfig.Config {
	return serveconfig.Config{Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Issuer: "https://issuer.runtime.test", Audience: "partner-api",
		RedisURL: redisURL, KeyPrefix: prefix, LogLevel: "info"}
}

func env(stderr io.Writer) cli.Env {
	return cli.Env{Getenv: func(string) string { return "" }, Stdout: io.Discard, Stderr: stderr}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Open reports every problem at once, the shared ones and the binary's
// own, as one usage error under one heading, and opens nothing: no log
// record is written.
func TestOpenChecks(t *testing.T) {
	cfg := config(redistest.URL(), "")
	cfg.MaxConns = -1
	var stderr logtest.Sink
	_, err := serverruntime.Open(context.Background(), cfg, env(&stderr), serverruntime.Options{
		Problems: []error{errors.New("--own (OWN) is required")}, Metrics: metrics.New("test")})
	var u cli.UsageError
	if want := "invalid configuration:\n--max-conns (MAX_CONNS) must not be negative\n--own (OWN) is required"; !errors.As(err, &u) || err.Error() != want {
		t.Errorf("Open: %v, want the usage error %q", err, want)
	}
	if cli.OneLine(err) != "invalid configuration: --max-conns (MAX_CONNS) must not be negative; --own (OWN) is required" {
		t.Errorf("one line: %q", cli.OneLine(err))
	}
	if stderr.String() != "" {
		t.Errorf("logged before the configuration was valid: %s", stderr.String())
	}
}

// The runtime on a real Redis, nonces on: the API, metrics and the
// binary's own listener all served; the nonces are the secret every
// replica shares in Redis; the Redis commands are counted on /metrics;
// after the context ends Serve returns nil, and Close closes the Redis
// client and writes the logs.
func TestServe(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	cfg := config(redistest.URL(), prefix)
	cfg.DPoPNonces = true
	var stderr logtest.Sink
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := serverruntime.Open(ctx, cfg, env(&stderr), serverruntime.Options{Metrics: metrics.New("test")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if !rt.Pipelined() {
		t.Error("REDIS_AUTOPIPELINE unset: not pipelined")
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := rt.Ready(r.Context()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, rt.Nonces().Nonce(time.Now()))
	})
	own := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "own") })
	if err := rt.Listen(ctx, api, serverruntime.Listener{Name: httpserver.Admin, Addr: "127.0.0.1:0", Handler: own}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- rt.Serve(ctx) }()

	status, nonce := get(t, "http://"+rt.Addr(httpserver.API).String()+"/")
	if status != http.StatusOK || nonce == "" {
		t.Fatalf("API: %d %q", status, nonce)
	}
	// Another replica, reading the secret from the same Redis, accepts it.
	other, err := dpopnonce.SharedNonces(ctx, rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !other.Valid(nonce, time.Now()) {
		t.Errorf("nonce %q is not the shared secret's", nonce)
	}
	if status, body := get(t, "http://"+rt.Addr(httpserver.Admin).String()+"/"); status != http.StatusOK || body != "own" {
		t.Errorf("own listener: %d %q", status, body)
	}
	status, body := get(t, "http://"+rt.Addr(httpserver.Metrics).String()+metrics.Path)
	// The nonce secret's SET NX, the start's PING and the readiness's.
	for _, want := range []string{`partnerapi_redis_command_duration_seconds_count{command="set"} 1`, `partnerapi_redis_command_duration_seconds_count{command="ping"} 2`} {
		if status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/metrics: %d, no %s:\n%s", status, want, body)
		}
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after the context ended: %v", err)
	}
	rt.Close()
	if err := rt.Redis().Ping(context.Background()).Err(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Redis after Close: %v, want the client closed", err)
	}
	if !strings.Contains(stderr.String(), `"msg":"metrics listening"`) {
		t.Errorf("logs not written by Close:\n%s", stderr.String())
	}
	rt.Close() // a second Close does nothing
}

// With Redis down the runtime opens and listens all the same: Listen warns
// that Redis does not answer yet, and Ready fails. Nonces are off: nil.
func TestRedisDown(t *testing.T) {
	cfg := config("redis://127.0.0.1:"+strconv.Itoa(redistest.FreePort(t))+"/0", "")
	var stderr logtest.Sink
	rt, err := serverruntime.Open(context.Background(), cfg, env(&stderr), serverruntime.Options{Metrics: metrics.New("test")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if rt.Nonces() != nil {
		t.Error("DPOP_NONCES off: Nonces is not nil")
	}
	if err := rt.Listen(context.Background(), http.NotFoundHandler()); err != nil {
		t.Fatal(err)
	}
	if err := rt.Ready(context.Background()); err == nil {
		t.Error("Ready with Redis down: nil")
	}
	rt.Close()
	var warned bool
	for _, rec := range stderr.Records(t) {
		warned = warned || (rec["level"] == "WARN" && rec["msg"] == "redis does not answer yet; requests get 503 until it does")
	}
	if !warned {
		t.Errorf("no warning that Redis does not answer:\n%s", stderr.String())
	}
	// The nonces need their secret at start: Redis down fails the start.
	cfg.DPoPNonces = true
	if _, err := serverruntime.Open(context.Background(), cfg, env(io.Discard), serverruntime.Options{Metrics: metrics.New("test")}); err == nil ||
		!strings.HasPrefix(err.Error(), "dpop nonce secret: ") {
		t.Errorf("nonces with Redis down: %v", err)
	}
}

// A listener that cannot be bound fails Listen, naming it; Close then
// releases the listeners bound before it.
func TestListenInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	rt, err := serverruntime.Open(context.Background(), config(redistest.URL(), ""), env(io.Discard), serverruntime.Options{Metrics: metrics.New("test")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	err = rt.Listen(context.Background(), http.NotFoundHandler(),
		serverruntime.Listener{Name: httpserver.Admin, Addr: taken.Addr().String(), Handler: http.NotFoundHandler()})
	if err == nil || !strings.HasPrefix(err.Error(), "listen on "+taken.Addr().String()+" (admin): ") {
		t.Fatalf("Listen on a taken address: %v", err)
	}
	api := rt.Addr(httpserver.API).String()
	rt.Close()
	ln, err := net.Listen("tcp", api)
	if err != nil {
		t.Fatalf("the API's address after Close: %v", err)
	}
	ln.Close()
}
