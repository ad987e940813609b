package serveconfig_test

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
)

var defaults = serveconfig.Defaults{Addr: ":8081", MetricsAddr: "127.0.0.1:9081", Issuer: "http://localhost:8080", Audience: "partner-api"}

func parse(t *testing.T, env map[string]string, args ...string) (serveconfig.Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	getenv := func(k string) string { return env[k] }
	f := &cli.EnvFlags{FS: fs, Getenv: getenv}
	var c serveconfig.Config
	c.Declare(f, defaults)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	c.Finish(getenv)
	return c, f.Err()
}

// The shared flags: defaults, then the environment, then flags; booleans
// as strconv.ParseBool reads them; REDIS_URL only from the environment
// unless --redis-url; REDIS_KEY_PREFIX read once, here.
func TestDeclare(t *testing.T) {
	c, err := parse(t, nil)
	want := serveconfig.Config{Addr: ":8081", MetricsAddr: "127.0.0.1:9081", Issuer: "http://localhost:8080", Audience: "partner-api",
		RedisURL: redisconn.DefaultURL, LogLevel: "info"}
	if err != nil || c != want {
		t.Errorf("defaults: %+v %v\nwant %+v", c, err, want)
	}
	env := map[string]string{"ADDR": ":1", "METRICS_ADDR": "off", "ISSUER": "https://i", "AUDIENCE": "a", "REDIS_URL": "redis://r:1/0",
		"REDIS_KEY_PREFIX": "p:", "TRUSTED_PROXIES": "10.0.0.0/8", "LOG_LEVEL": "warn", "MAX_CONNS": "9", "REDIS_AUTOPIPELINE": "1", "DPOP_NONCES": "true"}
	c, err = parse(t, env, "--addr", ":2", "--redis-url", "redis://flag:1/0", "--metrics-addr", "127.0.0.1:9", "--pprof")
	want = serveconfig.Config{Addr: ":2", MetricsAddr: "127.0.0.1:9", Issuer: "https://i", Audience: "a", RedisURL: "redis://flag:1/0", KeyPrefix: "p:",
		TrustedProxies: "10.0.0.0/8", LogLevel: "warn", MaxConns: 9, AutoPipeline: serveconfig.PipeliningOn, DPoPNonces: true, Profiling: true}
	if err != nil || c != want {
		t.Errorf("environment and flags: %+v %v\nwant %+v", c, err, want)
	}
	if len(c.Problems()) != 0 {
		t.Errorf("problems: %v", c.Problems())
	}
	for v, want := range map[string]serveconfig.Pipelining{"TRUE": serveconfig.PipeliningOn, "t": serveconfig.PipeliningOn,
		"FALSE": serveconfig.PipeliningOff, "0": serveconfig.PipeliningOff, "auto": {}} {
		if c, err := parse(t, map[string]string{"REDIS_AUTOPIPELINE": v}); err != nil || c.AutoPipeline != want {
			t.Errorf("REDIS_AUTOPIPELINE=%s: %v %v, want %v", v, c.AutoPipeline.String(), err, want.String())
		}
	}
	for _, args := range [][]string{{"--redis-autopipeline=false"}, {"--redis-autopipeline", "--redis-autopipeline=0"}} {
		if c, err := parse(t, map[string]string{"REDIS_AUTOPIPELINE": "true"}, args...); err != nil || c.AutoPipeline != serveconfig.PipeliningOff {
			t.Errorf("%v over REDIS_AUTOPIPELINE=true: %v %v", args, c.AutoPipeline.String(), err)
		}
	}
	if c, err := parse(t, map[string]string{"REDIS_AUTOPIPELINE": "false"}, "--redis-autopipeline"); err != nil || c.AutoPipeline != serveconfig.PipeliningOn {
		t.Errorf("bare --redis-autopipeline over REDIS_AUTOPIPELINE=false: %v %v", c.AutoPipeline.String(), err)
	}
	if _, err := parse(t, map[string]string{"REDIS_AUTOPIPELINE": "yes"}); err == nil ||
		err.Error() != `REDIS_AUTOPIPELINE="yes": want auto, true or false (or 1 or 0)` {
		t.Errorf("REDIS_AUTOPIPELINE=yes: %v", err)
	}
	if c, err := parse(t, map[string]string{"DPOP_NONCES": "true"}, "--dpop-nonces=false"); err != nil || c.DPoPNonces {
		t.Errorf("--dpop-nonces=false over DPOP_NONCES=true: %v %v", c.DPoPNonces, err)
	}
	if _, err := parse(t, map[string]string{"DPOP_NONCES": "on"}); err == nil || !strings.Contains(err.Error(), `DPOP_NONCES="on"`) {
		t.Errorf("DPOP_NONCES=on: %v", err)
	}
	var u cli.UsageError
	if _, err := parse(t, map[string]string{"REDIS_AUTOPIPELINE": "yes", "MAX_CONNS": "many"}); !errors.As(err, &u) ||
		err.Error() != `MAX_CONNS="many": want a whole number; REDIS_AUTOPIPELINE="yes": want auto, true or false (or 1 or 0)` {
		t.Errorf("invalid environment: %v", err)
	}
}

// Problems names every problem, each with its flag and variable, and never
// the Redis URL's content.
func TestProblems(t *testing.T) {
	if c, err := parse(t, map[string]string{"PPROF": "true", "METRICS_ADDR": "off"}); err != nil ||
		errors.Join(c.Problems()...).Error() != "--pprof (PPROF) serves the profiles on the metrics listener: set --metrics-addr (METRICS_ADDR), not off" {
		t.Errorf("profiles without the metrics listener: %v %v", c.Problems(), err)
	}
	c, _ := parse(t, map[string]string{"REDIS_URL": "redis://u:hunter2@[::1"}, "--addr", "nonsense", "--metrics-addr", "nowhere",
		"--issuer", " ", "--audience", "", "--trusted-proxies", "bad", "--log-level", "loud", "--max-conns", "-1")
	got := errors.Join(c.Problems()...).Error()
	for _, want := range []string{`--addr (ADDR) "nonsense": want host:port or :port`, `--metrics-addr (METRICS_ADDR) "nowhere": want host:port, :port or off`,
		"--issuer (ISSUER) is required", "--audience (AUDIENCE) is required", "REDIS_URL", `trusted proxy "bad"`, `log level "loud"`,
		"--max-conns (MAX_CONNS) must not be negative"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "hunter2") {
		t.Error("the Redis password is in the problems")
	}
	if n := len(c.Problems()); n != 8 {
		t.Errorf("%d problems, want 8:\n%s", n, got)
	}
}

// Automatic pipelining, auto: on; true and false as set.
func TestPipeliningOn(t *testing.T) {
	for p, want := range map[serveconfig.Pipelining]bool{{}: true, serveconfig.PipeliningOn: true, serveconfig.PipeliningOff: false} {
		if got := p.On(); got != want {
			t.Errorf("%s: on %v, want %v", p.String(), got, want)
		}
	}
}
