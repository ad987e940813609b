package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// defaultMetricsAddr serves /metrics on loopback only: off the
// partner-facing port, and not exposed until an operator says where
// (compose sets METRICS_ADDR=:9080).
const defaultMetricsAddr = "127.0.0.1:9080"

// defaultAdminAddr serves the admin API on loopback only: never on the
// partner-facing port, and not exposed until an operator says where.
const defaultAdminAddr = "127.0.0.1:8090"

// serveConfig is the configuration of `authserver serve`, from flags over
// environment variables over defaults.
type serveConfig struct {
	Addr           string
	MetricsAddr    string
	AdminAddr      string
	KeysFile       string
	Issuer         string
	Audience       string
	RedisURL       string
	TrustedProxies string
	LogLevel       string
	// AcceptLegacySecrets: see tokenserver.Config.AcceptLegacySecrets.
	AcceptLegacySecrets bool
	// JWKS: what clients' jwks_uri may be (tokenserver.JWKSPolicy).
	JWKS tokenserver.JWKSPolicy
	// MaxAssertionLifetime: tokenserver.Config.MaxAssertionLifetime.
	MaxAssertionLifetime time.Duration
	MaxConns             int // 0: httpserver.DefaultMaxConns (from RLIMIT_NOFILE)
	// AutoPipeline: clients.Store.UseAutoPipeline for the token service.
	AutoPipeline bool
}

func (c serveConfig) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("--addr (ADDR) is required"))
	}
	if !metrics.ValidAddr(c.MetricsAddr) {
		errs = append(errs, fmt.Errorf("--metrics-addr (METRICS_ADDR) %q: want host:port, :port or off", c.MetricsAddr))
	}
	if !metrics.ValidAddr(c.AdminAddr) {
		errs = append(errs, fmt.Errorf("--admin-addr (ADMIN_ADDR) %q: want host:port, :port or off", c.AdminAddr))
	} else if c.AdminAddr != "off" && c.AdminAddr == c.Addr {
		errs = append(errs, errors.New("--admin-addr (ADMIN_ADDR) must not be the partner-facing --addr"))
	}
	if c.KeysFile == "" {
		errs = append(errs, errors.New("--keys (KEYS_FILE) is required: create one with 'authserver keys generate --out FILE'"))
	}
	if c.Issuer == "" {
		errs = append(errs, errors.New("--issuer (ISSUER) is required"))
	}
	if c.Audience == "" {
		errs = append(errs, errors.New("--audience (AUDIENCE) is required"))
	}
	if _, err := clientip.ParseTrust(c.TrustedProxies); err != nil {
		errs = append(errs, err)
	}
	if c.MaxAssertionLifetime < 0 || c.MaxAssertionLifetime > tokenserver.MaxAssertionLifetimeLimit {
		errs = append(errs, fmt.Errorf("--max-assertion-lifetime (MAX_ASSERTION_LIFETIME) %v: want at most %v", c.MaxAssertionLifetime, tokenserver.MaxAssertionLifetimeLimit))
	}
	if c.MaxConns < 0 {
		errs = append(errs, errors.New("--max-conns (MAX_CONNS) must not be negative"))
	}
	return errors.Join(errs...)
}

func serveCommand(fs *flag.FlagSet, env cli.Env) cli.Action {
	getenv := env.Getenv
	cfg := &serveConfig{}
	fs.StringVar(&cfg.Addr, "addr", cli.EnvOr(getenv, "ADDR", ":8080"), "listen address of the API (env ADDR)")
	fs.StringVar(&cfg.MetricsAddr, "metrics-addr", cli.EnvOr(getenv, "METRICS_ADDR", defaultMetricsAddr), "listen address of GET /metrics, or off (env METRICS_ADDR)")
	fs.StringVar(&cfg.AdminAddr, "admin-addr", cli.EnvOr(getenv, "ADMIN_ADDR", defaultAdminAddr), "listen address of the admin API, or off (env ADMIN_ADDR)")
	fs.StringVar(&cfg.KeysFile, "keys", getenv("KEYS_FILE"), "JWK set file of signing keys (env KEYS_FILE)")
	fs.StringVar(&cfg.Issuer, "issuer", cli.EnvOr(getenv, "ISSUER", "http://localhost:8080"), "token issuer (iss) and public base URL (env ISSUER)")
	fs.StringVar(&cfg.Audience, "audience", cli.EnvOr(getenv, "AUDIENCE", "partner-api"), "token audience (aud) (env AUDIENCE)")
	// Not defaulted from the environment like the others: --help would
	// print the URL's password.
	fs.StringVar(&cfg.RedisURL, "redis-url", "", "Redis URL (env REDIS_URL, preferred: flags are visible in ps; default "+redisconn.DefaultURL+")")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", getenv("TRUSTED_PROXIES"), "comma-separated proxy CIDRs whose forwarded headers are trusted (env TRUSTED_PROXIES)")
	fs.StringVar(&cfg.LogLevel, "log-level", getenv("LOG_LEVEL"), "debug, info, warn or error (env LOG_LEVEL; default info)")
	fs.BoolVar(&cfg.AcceptLegacySecrets, "accept-legacy-secrets", getenv("ACCEPT_LEGACY_SECRETS") == "true",
		"also accept client secrets issued before checksums, until every such client is rotated (env ACCEPT_LEGACY_SECRETS=true)")
	fs.BoolVar(&cfg.JWKS.AllowHTTP, "jwks-url-allow-http", getenv("JWKS_URL_ALLOW_HTTP") == "true",
		"fetch private_key_jwt clients' jwks_uri over plain http too, not only https (env JWKS_URL_ALLOW_HTTP=true)")
	fs.BoolVar(&cfg.JWKS.AllowPrivate, "jwks-url-allow-private", getenv("JWKS_URL_ALLOW_PRIVATE") == "true",
		"let a jwks_uri resolve to loopback, private or link-local addresses (env JWKS_URL_ALLOW_PRIVATE=true)")
	maxLifetime := fs.String("max-assertion-lifetime", getenv("MAX_ASSERTION_LIFETIME"),
		"longest a private_key_jwt client assertion may live, exp - now, e.g. 5m (env MAX_ASSERTION_LIFETIME; default 1h, what Authlib signs)")
	fs.BoolVar(&cfg.AutoPipeline, "redis-autopipeline", getenv("REDIS_AUTOPIPELINE") == "true",
		"send the per-request Redis scripts through go-redis's automatic pipelining (env REDIS_AUTOPIPELINE=true)")
	maxConns := fs.String("max-conns", getenv("MAX_CONNS"), "connections served at once (env MAX_CONNS; default: from the open file limit)")
	return func(ctx context.Context, _ []string) error {
		if cfg.RedisURL == "" {
			cfg.RedisURL = getenv("REDIS_URL")
		}
		if *maxLifetime != "" {
			d, err := time.ParseDuration(*maxLifetime)
			if err != nil {
				return usagef("--max-assertion-lifetime (MAX_ASSERTION_LIFETIME) %q: want a duration such as 5m or 1h", *maxLifetime)
			}
			cfg.MaxAssertionLifetime = d
		}
		if *maxConns != "" {
			n, err := strconv.Atoi(*maxConns)
			if err != nil {
				return usagef("--max-conns (MAX_CONNS) %q: want a number", *maxConns)
			}
			cfg.MaxConns = n
		}
		return serve(ctx, *cfg, env)
	}
}

func serve(ctx context.Context, cfg serveConfig, env cli.Env) error {
	if err := cfg.Validate(); err != nil {
		return cli.AsUsage(err)
	}
	// The access log's records share write(2)s under load (BatchWriter);
	// what is pending is written before serve returns.
	logs := logging.NewBatchWriter(env.Stderr)
	defer logs.Close()
	logger, err := logging.New(logs, cfg.LogLevel)
	if err != nil {
		return cli.AsUsage(err)
	}
	redisconn.SetLogger(logger)
	keys, err := accesstoken.LoadKeySet(cfg.KeysFile)
	if err != nil {
		return err
	}
	rdb, err := redisconn.Open(cfg.RedisURL)
	if err != nil {
		return cli.AsUsage(err)
	}
	defer rdb.Close()
	m := metrics.NewTokenService(metrics.New("authserver"))
	rdb.AddHook(m.RedisHook())
	trust, _ := clientip.ParseTrust(cfg.TrustedProxies)
	prefix := env.Getenv("REDIS_KEY_PREFIX")
	registry := clients.NewStore(rdb, prefix, nil)
	if cfg.AutoPipeline {
		if err := registry.UseAutoPipeline(); err != nil {
			return err
		}
	}
	h, err := tokenserver.NewServer(logger, tokenserver.Config{Issuer: cfg.Issuer, Audience: cfg.Audience, Trust: trust,
		AcceptLegacySecrets: cfg.AcceptLegacySecrets, JWKS: cfg.JWKS, MaxAssertionLifetime: cfg.MaxAssertionLifetime},
		tokenserver.Deps{
			Registry: registry,
			Keys:     keys,
			Ready:    func(ctx context.Context) error { return redisconn.Ready(ctx, rdb, time.Second) },
			Metrics:  m,
		})
	if err != nil {
		return err
	}
	defer watchWithdrawals(ctx, rdb, prefix, cfg.KeysFile, keys, h, logger).Close()
	admin, err := newAdmin(logger, cfg, env, rdb, h, trust)
	if err != nil {
		return err
	}
	ls, err := metrics.ListenAll(cfg.Addr, cfg.MetricsAddr)
	if err != nil {
		return err
	}
	aln, err := metrics.Listen(cfg.AdminAddr) // the same "host:port or off" rule
	if err != nil {
		ls.Close()
		return fmt.Errorf("listen on %s (admin API): %w", cfg.AdminAddr, err)
	}
	if err := redisconn.Ping(ctx, rdb, 2*time.Second); err != nil {
		logger.Warn("redis does not answer yet; requests get 503 until it does", "err", err)
	}
	logger.Info("token service listening", "addr", ls.API.Addr().String(), "issuer", cfg.Issuer, "signing_kid", keys.SigningKeyID())
	fmt.Fprintf(env.Stdout, "authserver listening on http://%s\n", ls.API.Addr())
	if aln == nil {
		return m.ServeWith(ctx, ls, h, logger, httpserver.MaxConns(cfg.MaxConns))
	}
	logger.Info("admin API listening", "addr", aln.Addr().String())
	fmt.Fprintf(env.Stdout, "admin API listening on http://%s%s\n", aln.Addr(), adminapi.Prefix)
	adminDone := make(chan error, 1)
	go func() { adminDone <- httpserver.Serve(ctx, aln, m.Middleware(admin), logger.With("listener", "admin")) }()
	err = m.ServeWith(ctx, ls, h, logger, httpserver.MaxConns(cfg.MaxConns))
	if aerr := <-adminDone; err == nil && aerr != nil {
		err = fmt.Errorf("admin API: %w", aerr)
	}
	return err
}

// newAdmin wires the admin API (nil when --admin-addr is off). Its changes
// wait for the replicas REDIS_URL asks for, like the command line's.
func newAdmin(logger *slog.Logger, cfg serveConfig, env cli.Env, rdb redis.UniversalClient, h *tokenserver.Server, trust clientip.Trust) (http.Handler, error) {
	if cfg.AdminAddr == "off" {
		return nil, nil
	}
	confirm, err := redisconn.ConfirmationOf(cfg.RedisURL)
	if err != nil {
		return nil, cli.AsUsage(err)
	}
	prefix := env.Getenv("REDIS_KEY_PREFIX")
	store := clients.NewStore(rdb, prefix, nil)
	store.ConfirmWrites(confirm)
	withdrawals := keywithdrawal.NewStore(rdb, prefix)
	withdrawals.ConfirmWrites(confirm)
	return adminapi.NewServer(logger.With("listener", "admin"), adminapi.Config{Trust: trust, KeyPrefix: prefix, JWKSAllowHTTP: cfg.JWKS.AllowHTTP},
		adminapi.Deps{Ops: &operations.Service{Registry: store, Withdrawals: withdrawals, JWKS: cfg.JWKS}, Tokens: h, Admit: store, Keys: h, Redis: rdb})
}
