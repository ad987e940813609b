package serveconfig

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

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
	// built with (default.pgo). Off by default.
	Profiling bool
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
	return errs
}

// Trust is the parsed TrustedProxies (valid once Problems found none).
func (c Config) Trust() clientip.Trust {
	t, _ := clientip.ParseTrust(c.TrustedProxies)
	return t
}

// Logger returns the serving process's logger, writing JSON records to w
// through a logging.BatchWriter (the access log's records share write(2)s
// under load), and sends go-redis's own lines through it: the one place a
// serving process sets go-redis's process-wide logger. close writes what
// is pending.
func (c Config) Logger(w io.Writer) (logger *slog.Logger, close func(), err error) {
	logs := logging.NewBatchWriter(w)
	logger, err = logging.New(logs, c.LogLevel)
	if err != nil {
		logs.Close()
		return nil, nil, cli.AsUsage(err)
	}
	redisconn.SetLogger(logger)
	return logger, func() { logs.Close() }, nil
}

// Listen binds the API (served with --max-conns) and metrics listeners of
// c in g, the latter with the profiles when --pprof is on.
func (c Config) Listen(g *httpserver.Group) error {
	if _, err := g.Listen(httpserver.API, c.Addr, httpserver.MaxConns(c.MaxConns)); err != nil {
		return err
	}
	if _, err := g.ListenMetrics(c.MetricsAddr, c.Profiling); err != nil {
		g.Close()
		return err
	}
	return nil
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
