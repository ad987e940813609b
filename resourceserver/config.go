package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// Defaults (contract notes: binaries, flags and environment).
const (
	defaultAddr     = ":8081"
	defaultJWKSURL  = "http://localhost:8080/.well-known/jwks.json"
	defaultIssuer   = "http://localhost:8080"
	defaultAudience = "partner-api"
	// defaultMetricsAddr serves /metrics on loopback only, off the
	// partner-facing port (compose sets METRICS_ADDR=:9081).
	defaultMetricsAddr = "127.0.0.1:9081"
)

// config is the configuration of serve: each field from its flag, else its
// environment variable, else its default.
type config struct {
	Addr           string // --addr, ADDR
	MetricsAddr    string // --metrics-addr, METRICS_ADDR: GET /metrics, or "off"
	JWKSURL        string // --jwks-url, JWKS_URL
	Issuer         string // --issuer, ISSUER
	Audience       string // --audience, AUDIENCE
	RedisURL       string // --redis-url, REDIS_URL (prefer the environment: flags show in ps)
	KeyPrefix      string // REDIS_KEY_PREFIX: prefix of every Redis key (shared instances, tests)
	TrustedProxies string // --trusted-proxies, TRUSTED_PROXIES: comma-separated CIDRs or addresses
	LogLevel       string // --log-level, LOG_LEVEL: debug, info, warn or error
	BaseURL        string // --base-url, BASE_URL: public address written into the documentation
	MaxConnsFlag   string // --max-conns, MAX_CONNS: connections served at once ("": from the open file limit)
	AutoPipeline   bool   // --redis-autopipeline, REDIS_AUTOPIPELINE=true: pipeline the per-request scripts (clients.Store.UseAutoPipeline)
}

// declareFlags binds serve's flags to cfg, with defaults from the
// environment; finish completes cfg after parsing.
func (cfg *config) declareFlags(fs *flag.FlagSet, getenv func(string) string) (finish func()) {
	env := func(name, def string) string { return cli.EnvOr(getenv, name, def) }
	fs.StringVar(&cfg.Addr, "addr", env("ADDR", defaultAddr), "listen address of the API (env ADDR)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", env("METRICS_ADDR", defaultMetricsAddr), "listen address of GET /metrics, or off (env METRICS_ADDR)")
	fs.StringVar(&cfg.JWKSURL, "jwks-url", env("JWKS_URL", defaultJWKSURL), "the token service's JWKS (env JWKS_URL)")
	fs.StringVar(&cfg.Issuer, "issuer", env("ISSUER", defaultIssuer), `"iss" of accepted tokens (env ISSUER)`)
	fs.StringVar(&cfg.Audience, "audience", env("AUDIENCE", defaultAudience), `"aud" of accepted tokens (env AUDIENCE)`)
	// Not defaulted from the environment like the others: --help would
	// print the URL's password.
	fs.StringVar(&cfg.RedisURL, "redis-url", "", "Redis URL (env REDIS_URL, preferred: flags are visible in ps; default "+redisconn.DefaultURL+")")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", env("TRUSTED_PROXIES", ""), "comma-separated CIDRs of trusted reverse proxies (env TRUSTED_PROXIES)")
	fs.StringVar(&cfg.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (env LOG_LEVEL)")
	fs.StringVar(&cfg.BaseURL, "base-url", env("BASE_URL", ""), "public base URL written into the documentation ({base_url}) and its links; empty: derived from each request (env BASE_URL)")
	fs.StringVar(&cfg.MaxConnsFlag, "max-conns", env("MAX_CONNS", ""), "connections served at once; default from the open file limit (env MAX_CONNS)")
	fs.BoolVar(&cfg.AutoPipeline, "redis-autopipeline", getenv("REDIS_AUTOPIPELINE") == "true", "send the per-request Redis scripts through go-redis's automatic pipelining (env REDIS_AUTOPIPELINE=true)")
	return func() {
		if cfg.RedisURL == "" {
			cfg.RedisURL = env("REDIS_URL", redisconn.DefaultURL)
		}
		cfg.KeyPrefix = getenv("REDIS_KEY_PREFIX")
	}
}

// Validate checks every setting and reports every problem at once. It
// changes nothing: serve reads the parsed values (trust, maxConns) after it.
func (c config) Validate() error {
	var errs []error
	if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("addr %q: want host:port or :port", c.Addr))
	}
	if !metrics.ValidAddr(c.MetricsAddr) {
		errs = append(errs, fmt.Errorf("metrics-addr %q: want host:port, :port or off", c.MetricsAddr))
	}
	if u, err := url.Parse(c.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("jwks-url %q: want an absolute http or https URL", c.JWKSURL))
	}
	if strings.TrimSpace(c.Issuer) == "" {
		errs = append(errs, errors.New("issuer: required"))
	}
	if strings.TrimSpace(c.Audience) == "" {
		errs = append(errs, errors.New("audience: required"))
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
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("base-url %q: want an absolute http or https URL", c.BaseURL))
		}
	}
	if c.MaxConnsFlag != "" {
		if n, err := strconv.Atoi(c.MaxConnsFlag); err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("max-conns %q: want a number, 0 or more", c.MaxConnsFlag))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid configuration:\n%w", errors.Join(errs...))
	}
	return nil
}

// trust is the parsed TrustedProxies (valid once Validate passed).
func (c *config) trust() clientip.Trust {
	t, _ := clientip.ParseTrust(c.TrustedProxies)
	return t
}

// maxConns is the parsed MaxConnsFlag, 0 when unset (valid once Validate
// passed).
func (c *config) maxConns() int {
	n, _ := strconv.Atoi(c.MaxConnsFlag)
	return n
}
