package serveconfig

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// Defaults are a binary's own defaults of the shared flags.
type Defaults struct {
	Addr        string // the API
	MetricsAddr string // loopback only, off the partner-facing port
	Issuer      string
	Audience    string
}

// MaxShutdownDelay bounds --shutdown-delay: a delay longer than a
// supervisor's grace period (Kubernetes' default 30 s) would get the
// process killed in the middle of its drain.
const MaxShutdownDelay = 30 * time.Second

// Config is the shared part of a serve command's configuration: each field
// from its flag, else its environment variable, else its default.
type Config struct {
	Addr        string // --addr, ADDR
	MetricsAddr string // --metrics-addr, METRICS_ADDR: GET /metrics, or off
	Issuer      string // --issuer, ISSUER
	Audience    string // --audience, AUDIENCE
	// RedisURL: --redis-url, else REDIS_URL (preferred: flags show in ps),
	// else redisconn.DefaultURL.
	RedisURL string
	// KeyPrefix: REDIS_KEY_PREFIX (redisconn.KeyPrefix), the prefix of
	// every Redis key (shared instances, tests).
	KeyPrefix      string
	TrustedProxies string // --trusted-proxies, TRUSTED_PROXIES: comma-separated CIDRs or addresses
	LogLevel       string // --log-level, LOG_LEVEL: debug, info, warn or error
	MaxConns       int    // --max-conns, MAX_CONNS: connections served at once (0: from the open file limit)
	// AutoPipeline: --redis-autopipeline, REDIS_AUTOPIPELINE: whether to
	// send the per-request scripts through go-redis's automatic pipelining
	// (auto by default: see Pipelining).
	AutoPipeline Pipelining
	// DPoPNonces: --dpop-nonces, DPOP_NONCES: require a server nonce in
	// every DPoP proof (RFC 9449 sections 8 and 9), at the token endpoint
	// and at both APIs alike, from the secret every replica shares in
	// Redis (pkg/dpopnonce). Off by default.
	DPoPNonces bool
	// Profiling: --pprof, PPROF: also serve the Go runtime's profiles
	// (net/http/pprof, httpserver.ProfileRoutes) on the metrics listener,
	// for go tool pprof and for refreshing the profiles the binaries are
	// built with (release.pgo). Off by default.
	Profiling bool
	// ShutdownDelay: --shutdown-delay, SHUTDOWN_DELAY: on SIGTERM, how long
	// the process keeps serving with /readyz answering 503 before its
	// listeners close (serverruntime.Serve), so that a proxy's health
	// checks take it out of rotation first. 0 (the default): close at once.
	ShutdownDelay time.Duration
	// TLS: --tls-cert, --tls-key and (token service) --client-ca: where
	// TLS ends (tls.go).
	TLS TLS
}

// Declare binds the shared flags to c on f, with d's defaults. Finish
// completes c once the flags are parsed.
func (c *Config) Declare(f *cli.EnvFlags, d Defaults) {
	f.String(&c.Addr, "addr", "ADDR", d.Addr, "listen address of the API")
	f.String(&c.MetricsAddr, "metrics-addr", "METRICS_ADDR", d.MetricsAddr, "listen address of GET /metrics, or off")
	f.String(&c.Issuer, "issuer", "ISSUER", d.Issuer, `token issuer ("iss") and the token service's public base URL`)
	f.String(&c.Audience, "audience", "AUDIENCE", d.Audience, `token audience ("aud")`)
	// Not defaulted from the environment like the others: --help would
	// print the URL's password.
	f.FS.StringVar(&c.RedisURL, "redis-url", "", "Redis URL (env REDIS_URL, preferred: flags are visible in ps; default "+redisconn.DefaultURL+")")
	f.String(&c.TrustedProxies, "trusted-proxies", "TRUSTED_PROXIES", "", "comma-separated CIDRs of trusted reverse proxies, whose forwarded headers count")
	f.String(&c.LogLevel, "log-level", "LOG_LEVEL", "info", "debug, info, warn or error")
	f.Int(&c.MaxConns, "max-conns", "MAX_CONNS", 0, "connections served at once; 0: from the open file limit")
	f.Var(&c.AutoPipeline, "redis-autopipeline", "REDIS_AUTOPIPELINE",
		"send the per-request Redis scripts through go-redis's automatic pipelining: auto (on), true or false")
	f.Bool(&c.DPoPNonces, "dpop-nonces", "DPOP_NONCES", false,
		"require a server nonce (DPoP-Nonce) in every DPoP proof, shared by every replica through Redis")
	f.Bool(&c.Profiling, "pprof", "PPROF", false,
		"also serve the Go runtime's profiles (/debug/pprof/) on the metrics listener")
	f.Duration(&c.ShutdownDelay, "shutdown-delay", "SHUTDOWN_DELAY", 0,
		"on SIGTERM, keep serving this `duration` with /readyz answering 503 before closing the listeners (0: close at once)")
	c.TLS.declareTLS(f)
}

// Finish completes c after the flags are parsed: the Redis URL and key
// prefix from the environment.
func (c *Config) Finish(getenv func(string) string) {
	if c.RedisURL == "" {
		c.RedisURL = cli.EnvOr(getenv, "REDIS_URL", redisconn.DefaultURL)
	}
	c.KeyPrefix = redisconn.KeyPrefix(getenv)
}

// Problems checks every shared setting and returns every problem, each
// naming its flag and variable (never the Redis URL's content).
func (c Config) Problems() []error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("--addr (ADDR) is required"))
	} else if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("--addr (ADDR) %q: want host:port or :port", c.Addr))
	}
	if !httpserver.ValidAddr(c.MetricsAddr) {
		errs = append(errs, fmt.Errorf("--metrics-addr (METRICS_ADDR) %q: want host:port, :port or off", c.MetricsAddr))
	}
	if c.Profiling && c.MetricsAddr == httpserver.Off {
		errs = append(errs, errors.New("--pprof (PPROF) serves the profiles on the metrics listener: set --metrics-addr (METRICS_ADDR), not off"))
	}
	if strings.TrimSpace(c.Issuer) == "" {
		errs = append(errs, errors.New("--issuer (ISSUER) is required"))
	}
	if strings.TrimSpace(c.Audience) == "" {
		errs = append(errs, errors.New("--audience (AUDIENCE) is required"))
	}
	// Open only parses the URL and builds the client: it does not dial.
	if rdb, err := redisconn.Open(c.RedisURL); err != nil {
		errs = append(errs, err) // names REDIS_URL, never its content
	} else {
		_ = rdb.Close()
	}
	if _, err := clientip.ParseTrust(c.TrustedProxies); err != nil {
		errs = append(errs, err) // names the entry: trusted proxy "x": ...
	}
	if _, err := logging.New(io.Discard, c.LogLevel); err != nil {
		errs = append(errs, err) // log level "x": use debug, ...
	}
	if c.MaxConns < 0 {
		errs = append(errs, errors.New("--max-conns (MAX_CONNS) must not be negative"))
	}
	if c.ShutdownDelay < 0 || c.ShutdownDelay > MaxShutdownDelay {
		errs = append(errs, fmt.Errorf("--shutdown-delay (SHUTDOWN_DELAY) %v: want 0 to %v", c.ShutdownDelay, MaxShutdownDelay))
	}
	errs = append(errs, c.TLS.problems()...)
	return errs
}

// Check reports every problem of the shared settings (Problems) and of a
// binary's own (own) at once, as one usage error (exit status 2) headed
// "invalid configuration:", one problem a line; nil when there is none.
// Both serve commands report their configuration through it
// (serverruntime.Open).
func (c Config) Check(own ...error) error {
	errs := append(c.Problems(), own...)
	if len(errs) == 0 {
		return nil
	}
	return cli.AsUsage(fmt.Errorf("invalid configuration:\n%w", errors.Join(errs...)))
}

// Trust is the parsed TrustedProxies (valid once Problems found none).
func (c Config) Trust() clientip.Trust {
	t, _ := clientip.ParseTrust(c.TrustedProxies)
	return t
}

// HealthcheckCommand is both binaries' `healthcheck`: exit 0 when the
// local /readyz answers 200 (httpserver.ProbeURL: HEALTHCHECK_PORT, else
// ADDR's port, else defaultPort).
func HealthcheckCommand(defaultPort string) func(fs *flag.FlagSet, env cli.Env) cli.Action {
	return func(fs *flag.FlagSet, env cli.Env) cli.Action {
		url := fs.String("url", httpserver.ProbeURL(env.Getenv, defaultPort), "URL that must answer 200")
		return func(ctx context.Context, _ []string) error {
			return httpserver.Healthcheck(ctx, *url, env.Stdout)
		}
	}
}
