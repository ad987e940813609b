package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/dpopnonce"
	"github.com/partnerapi/authplatform/pkg/heapfloor"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
)

// defaults of the shared serve flags (serveconfig). /metrics and the admin
// API listen on loopback only: off the partner-facing port, and not exposed
// until an operator says where (compose sets METRICS_ADDR=:9080).
var defaults = serveconfig.Defaults{
	Addr:        ":8080",
	MetricsAddr: "127.0.0.1:9080",
	Issuer:      "http://localhost:8080",
	Audience:    "partner-api",
}

// defaultAdminAddr serves the admin API on loopback only: never on the
// partner-facing port, and not exposed until an operator says where.
const defaultAdminAddr = "127.0.0.1:8090"

// serveConfig is the configuration of `authserver serve`, from flags over
// environment variables over defaults: the shared part and the token
// service's own.
type serveConfig struct {
	serveconfig.Config
	AdminAddr string
	// AdminBaseURL: --admin-base-url, ADMIN_BASE_URL, the admin API's
	// public base URL, which a DPoP proof's htu names (package admission);
	// empty: derived from each request (trusted proxies' forwarded
	// headers, else its listener's address as the request named it).
	AdminBaseURL string
	KeysFile     string
	// AcceptLegacySecrets: see tokenserver.Config.AcceptLegacySecrets.
	AcceptLegacySecrets bool
	// JWKS: what clients' jwks_uri may be (tokenserver.JWKSPolicy).
	JWKS tokenserver.JWKSPolicy
	// MaxAssertionLifetime: tokenserver.Config.MaxAssertionLifetime.
	MaxAssertionLifetime time.Duration
}

func (c serveConfig) Validate() error {
	errs := c.Problems()
	if !httpserver.ValidAddr(c.AdminAddr) {
		errs = append(errs, fmt.Errorf("--admin-addr (ADMIN_ADDR) %q: want host:port, :port or off", c.AdminAddr))
	} else if c.AdminAddr != httpserver.Off && c.AdminAddr == c.Addr {
		errs = append(errs, errors.New("--admin-addr (ADMIN_ADDR) must not be the partner-facing --addr"))
	}
	if _, ok := dpop.NormalizeURI(c.AdminBaseURL); c.AdminBaseURL != "" && !ok {
		errs = append(errs, fmt.Errorf("--admin-base-url (ADMIN_BASE_URL) %q: want an absolute http or https URL", c.AdminBaseURL))
	}
	if c.KeysFile == "" {
		errs = append(errs, errors.New("--keys (KEYS_FILE) is required: create one with 'authserver keys generate --out FILE'"))
	}
	if c.MaxAssertionLifetime < 0 || c.MaxAssertionLifetime > tokenserver.MaxAssertionLifetimeLimit {
		errs = append(errs, fmt.Errorf("--max-assertion-lifetime (MAX_ASSERTION_LIFETIME) %v: want at most %v", c.MaxAssertionLifetime, tokenserver.MaxAssertionLifetimeLimit))
	}
	return errors.Join(errs...)
}

func serveCommand(fs *flag.FlagSet, env cli.Env) cli.Action {
	f := &cli.EnvFlags{FS: fs, Getenv: env.Getenv}
	cfg := &serveConfig{}
	cfg.Declare(f, defaults)
	f.String(&cfg.AdminAddr, "admin-addr", "ADMIN_ADDR", defaultAdminAddr, "listen address of the admin API, or off")
	f.String(&cfg.AdminBaseURL, "admin-base-url", "ADMIN_BASE_URL", "", "public base URL of the admin API (DPoP proofs' htu); empty: from each request")
	f.String(&cfg.KeysFile, "keys", "KEYS_FILE", "", "JWK set file of signing keys")
	f.Bool(&cfg.AcceptLegacySecrets, "accept-legacy-secrets", "ACCEPT_LEGACY_SECRETS", false,
		"also accept client secrets issued before checksums, until every such client is rotated")
	f.Bool(&cfg.JWKS.AllowHTTP, "jwks-url-allow-http", "JWKS_URL_ALLOW_HTTP", false,
		"fetch private_key_jwt clients' jwks_uri over plain http too, not only https")
	f.Bool(&cfg.JWKS.AllowPrivate, "jwks-url-allow-private", "JWKS_URL_ALLOW_PRIVATE", false,
		"let a jwks_uri resolve to loopback, private or link-local addresses")
	f.Duration(&cfg.MaxAssertionLifetime, "max-assertion-lifetime", "MAX_ASSERTION_LIFETIME", tokenserver.DefaultMaxAssertionLifetime,
		"longest a private_key_jwt client assertion may live (exp - now), a `duration` such as 5m or 1h; the default is what Authlib signs")
	return func(ctx context.Context, _ []string) error {
		if err := f.Err(); err != nil {
			return err
		}
		cfg.Finish(env.Getenv)
		return serve(ctx, *cfg, env)
	}
}

func serve(ctx context.Context, cfg serveConfig, env cli.Env) error {
	if err := cfg.Validate(); err != nil {
		return cli.AsUsage(err)
	}
	logger, closeLogs, err := cfg.Logger(env.Stderr)
	if err != nil {
		return err
	}
	defer closeLogs()
	// The collector's heap goal kept at 20 MiB or more while serving,
	// unless GOGC is set (package heapfloor).
	defer heapfloor.Start(ctx, env.Getenv)()
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
	trust := cfg.Trust()
	registry := clients.NewStore(rdb, cfg.KeyPrefix, nil)
	pipelined := cfg.AutoPipeline.On()
	if pipelined {
		// The metrics hook for the pipelined scripts too: on a Cluster
		// they run on clients of their own (redisconn.PrimaryPipes).
		if err := registry.UseAutoPipeline(m.RedisHook()); err != nil {
			return err
		}
		defer registry.Close()
	}
	// The one signing-key authority, kept current by the withdrawal
	// watcher, and the one verifier over it (introspection, revocation and
	// the admin API).
	authority, err := signingkeys.New(keys, cfg.Issuer, cfg.Audience)
	if err != nil {
		return err
	}
	defer watchWithdrawals(ctx, rdb, cfg.KeyPrefix, cfg.KeysFile, keys, authority, logger).Close()
	verifier := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(authority, cfg.Issuer, cfg.Audience, nil), 0, m.TokenCache)
	// DPoP server nonces (DPOP_NONCES): one secret in Redis, shared by
	// every replica (pkg/dpopnonce), required by the
	// token endpoint and both APIs alike.
	var nonces admission.Nonces
	if cfg.DPoPNonces {
		shared, err := dpopnonce.SharedNonces(ctx, rdb, cfg.KeyPrefix)
		if err != nil {
			return err
		}
		go shared.Watch(ctx, logger)
		nonces = shared
	}
	h, err := tokenserver.NewServer(logger, tokenserver.Config{Issuer: cfg.Issuer, Audience: cfg.Audience, Trust: trust,
		AcceptLegacySecrets: cfg.AcceptLegacySecrets, JWKS: cfg.JWKS, MaxAssertionLifetime: cfg.MaxAssertionLifetime},
		tokenserver.Deps{
			Registry: registry,
			Keys:     authority,
			Tokens:   verifier,
			Ready:    func(ctx context.Context) error { return redisconn.Ready(ctx, rdb, time.Second) },
			Metrics:  m,
			Nonces:   nonces,
		})
	if err != nil {
		return err
	}
	admin, err := newAdmin(logger, cfg, rdb, authority, verifier, trust, nonces, m.Metrics)
	if err != nil {
		return err
	}
	g := httpserver.NewGroup(logger, m.Metrics)
	if err := cfg.Listen(g); err != nil {
		return err
	}
	aaddr, err := g.Listen(httpserver.Admin, cfg.AdminAddr)
	if err != nil {
		g.Close()
		return err
	}
	g.Handle(httpserver.API, h)
	g.Handle(httpserver.Admin, admin)
	if err := redisconn.Ping(ctx, rdb, 2*time.Second); err != nil {
		logger.Warn("redis does not answer yet; requests get 503 until it does", "err", err)
	}
	addr := g.Addr(httpserver.API)
	logger.Info("token service listening", "addr", addr.String(), "issuer", cfg.Issuer, "signing_kid", keys.SigningKeyID(),
		"redis_autopipeline", pipelined)
	fmt.Fprintf(env.Stdout, "authserver listening on http://%s\n", addr)
	if aaddr != nil {
		logger.Info("admin API listening", "addr", aaddr.String())
		fmt.Fprintf(env.Stdout, "admin API listening on http://%s%s\n", aaddr, adminapi.Prefix)
	}
	return g.Serve(ctx)
}

// newAdmin wires the admin API (nil when --admin-addr is off), its answers
// counted in the token service's registry (m). Its changes wait for the
// replicas REDIS_URL asks for, like the command line's.
func newAdmin(logger *slog.Logger, cfg serveConfig, rdb redis.UniversalClient, keys *signingkeys.Authority, tokens *accesstoken.CachingVerifier, trust clientip.Trust, nonces admission.Nonces, m *metrics.Metrics) (http.Handler, error) {
	if cfg.AdminAddr == httpserver.Off {
		return nil, nil
	}
	confirm, err := redisconn.ConfirmationOf(cfg.RedisURL)
	if err != nil {
		return nil, cli.AsUsage(err)
	}
	prefix := cfg.KeyPrefix
	store := clients.NewStore(rdb, prefix, nil)
	store.ConfirmWrites(confirm)
	withdrawals := keywithdrawal.NewStore(rdb, prefix)
	withdrawals.ConfirmWrites(confirm)
	return adminapi.NewServer(logger.With("listener", "admin"), adminapi.Config{Trust: trust, KeyPrefix: prefix, JWKSAllowHTTP: cfg.JWKS.AllowHTTP, PublicBaseURL: cfg.AdminBaseURL},
		adminapi.Deps{Ops: &operations.Service{Registry: store, Withdrawals: withdrawals, JWKS: cfg.JWKS}, Tokens: tokens, Admit: store, Keys: keys, Redis: rdb, Nonces: nonces, Metrics: m})
}
