package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/authserver/console"
	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
	"github.com/partnerapi/authplatform/pkg/serverruntime"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
	"github.com/partnerapi/authplatform/pkg/tracing"
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
	// empty: from AdminAddr (adminBaseURL).
	AdminBaseURL string
	KeysFile     string
	// AcceptLegacySecrets: see tokenserver.Config.AcceptLegacySecrets.
	AcceptLegacySecrets bool
	// JWKS: what clients' jwks_uri may be (tokenserver.JWKSPolicy).
	JWKS tokenserver.JWKSPolicy
	// MaxAssertionLifetime: tokenserver.Config.MaxAssertionLifetime.
	MaxAssertionLifetime time.Duration
	// MTLSBaseURL: --mtls-base-url, MTLS_BASE_URL, the public base URL of
	// the mutual-TLS endpoints where it is not the issuer's
	// (tokenserver.Config.MTLSBaseURL).
	MTLSBaseURL string
}

// problems are the token service's own configuration problems, reported
// with the shared ones (serveconfig.Config.Check).
func (c serveConfig) problems() []error {
	var errs []error
	if !httpserver.ValidAddr(c.AdminAddr) {
		errs = append(errs, fmt.Errorf("--admin-addr (ADMIN_ADDR) %q: want host:port, :port or off", c.AdminAddr))
	} else if c.AdminAddr != httpserver.Off && c.AdminAddr == c.Addr {
		errs = append(errs, errors.New("--admin-addr (ADMIN_ADDR) must not be the partner-facing --addr"))
	}
	if _, ok := dpop.NormalizeURI(c.AdminBaseURL); c.AdminBaseURL != "" && !ok {
		errs = append(errs, fmt.Errorf("--admin-base-url (ADMIN_BASE_URL) %q: want an absolute http or https URL", c.AdminBaseURL))
	} else if _, err := c.adminBaseURL(); err != nil && httpserver.ValidAddr(c.AdminAddr) {
		errs = append(errs, err)
	}
	if c.KeysFile == "" {
		errs = append(errs, errors.New("--keys (KEYS_FILE) is required: create one with 'authserver keys generate --out FILE'"))
	}
	if c.MaxAssertionLifetime < 0 || c.MaxAssertionLifetime > tokenserver.MaxAssertionLifetimeLimit {
		errs = append(errs, fmt.Errorf("--max-assertion-lifetime (MAX_ASSERTION_LIFETIME) %v: want at most %v", c.MaxAssertionLifetime, tokenserver.MaxAssertionLifetimeLimit))
	}
	return errs
}

// adminBaseURL is the admin API's public base URL, which a DPoP proof's
// htu names (RFC 9449 section 4.3): --admin-base-url, else
// http://ADMIN_ADDR when that names a host and a port (the default,
// http://127.0.0.1:8090); never a request's Host (issue 59 point 8). An
// admin API on every interface (":8090") or on a port chosen at start
// (":0") has no address to derive it from: the flag is then required. ""
// with the admin API off.
func (c serveConfig) adminBaseURL() (string, error) {
	if c.AdminAddr == httpserver.Off {
		return "", nil
	}
	if c.AdminBaseURL != "" {
		return c.AdminBaseURL, nil
	}
	host, port, err := net.SplitHostPort(c.AdminAddr)
	if ip, perr := netip.ParseAddr(host); err == nil && host != "" && port != "0" && (perr != nil || !ip.IsUnspecified()) {
		return "http://" + c.AdminAddr, nil
	}
	return "", fmt.Errorf("--admin-base-url (ADMIN_BASE_URL) is required: --admin-addr (ADMIN_ADDR) %q names no host and port to derive the admin API's public base URL from, which a DPoP proof's htu must name (e.g. http://admin.internal:8090)", c.AdminAddr)
}

func serveCommand(fs *flag.FlagSet, env cli.Env) cli.Action {
	f := &cli.EnvFlags{FS: fs, Getenv: env.Getenv}
	cfg := &serveConfig{}
	cfg.Declare(f, defaults)
	f.String(&cfg.AdminAddr, "admin-addr", "ADMIN_ADDR", defaultAdminAddr, "listen address of the admin API, or off")
	f.String(&cfg.AdminBaseURL, "admin-base-url", "ADMIN_BASE_URL", "", "public base URL of the admin API (DPoP proofs' htu); empty: http://ADMIN_ADDR, required when that names no host")
	f.String(&cfg.KeysFile, "keys", "KEYS_FILE", "", "JWK set file of signing keys")
	f.Bool(&cfg.AcceptLegacySecrets, "accept-legacy-secrets", "ACCEPT_LEGACY_SECRETS", false,
		"also accept client secrets issued before checksums, until every such client is rotated")
	f.Bool(&cfg.JWKS.AllowHTTP, "jwks-url-allow-http", "JWKS_URL_ALLOW_HTTP", false,
		"fetch private_key_jwt clients' jwks_uri over plain http too, not only https")
	f.Bool(&cfg.JWKS.AllowPrivate, "jwks-url-allow-private", "JWKS_URL_ALLOW_PRIVATE", false,
		"let a jwks_uri resolve to loopback, private or link-local addresses")
	cfg.DeclareClientCA(f)
	f.String(&cfg.MTLSBaseURL, "mtls-base-url", "MTLS_BASE_URL", "",
		"public https base URL of the mutual-TLS endpoints where it is not the issuer's (metadata mtls_endpoint_aliases, RFC 8705 section 5)")
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

// serve runs the token service until ctx ends: the shared runtime
// (package serverruntime) and what is the token service's own, its signing
// keys, their authority and withdrawal watcher, the token endpoints and the
// admin API.
func serve(ctx context.Context, cfg serveConfig, env cli.Env) error {
	m := metrics.NewTokenService(metrics.New("authserver"))
	rt, err := serverruntime.Open(ctx, cfg.Config, env, serverruntime.Options{Problems: cfg.problems(), Metrics: m.Metrics, Service: "authserver"})
	if err != nil {
		return err
	}
	defer rt.Close()
	logger, rdb := rt.Logger(), rt.Redis()
	keys, err := accesstoken.LoadKeySet(cfg.KeysFile)
	if err != nil {
		return err
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
	trust := cfg.Trust()
	clientCAs, err := cfg.TLS.ClientCAs()
	if err != nil {
		return cli.AsUsage(err)
	}
	h, err := tokenserver.NewServer(logger, tokenserver.Config{Issuer: cfg.Issuer, Audience: cfg.Audience, Trust: trust,
		AcceptLegacySecrets: cfg.AcceptLegacySecrets, JWKS: cfg.JWKS, MaxAssertionLifetime: cfg.MaxAssertionLifetime,
		// Clients reach the token endpoint over mutual TLS when this
		// server ends TLS, or when a trusted edge may pass their
		// certificates (deploy/Caddyfile).
		ClientCAs: clientCAs, MTLS: cfg.TLS.On() || cfg.TrustedProxies != "", MTLSBaseURL: cfg.MTLSBaseURL},
		tokenserver.Deps{
			Registry: rt.Registry(),
			Keys:     authority,
			Tokens:   verifier,
			Ready:    rt.Ready,
			Metrics:  m,
			Nonces:   rt.Nonces(),
			Tracing:  rt.Tracing(),
		})
	if err != nil {
		return err
	}
	admin, adminStore, err := newAdmin(cfg, adminParts{Logger: logger, Redis: rdb, Keys: authority, Tokens: verifier, Trust: trust,
		Nonces: rt.Nonces(), Metrics: m.Metrics, Token: h, Tracing: rt.Tracing()})
	if err != nil {
		return err
	}
	if err := rt.Listen(ctx, h, serverruntime.Listener{Name: httpserver.Admin, Addr: cfg.AdminAddr, Handler: admin}); err != nil {
		return err
	}
	addr, aaddr := rt.Addr(httpserver.API), rt.Addr(httpserver.Admin)
	logger.Info("token service listening", "addr", addr.String(), "issuer", cfg.Issuer, "signing_kid", keys.SigningKeyID(),
		"redis_autopipeline", rt.Pipelined())
	fmt.Fprintf(env.Stdout, "authserver listening on http://%s\n", addr)
	if aaddr != nil {
		logger.Info("admin API listening", "addr", aaddr.String())
		fmt.Fprintf(env.Stdout, "admin API listening on http://%s%s\n", aaddr, adminapi.Prefix)
		fmt.Fprintf(env.Stdout, "operator console at http://%s%s\n", aaddr, console.Prefix)
		// The console's usage chart: each minute, one replica records
		// every client's minute from the windows the limits already keep
		// (clients.RecordUsage), off the request paths.
		sampling, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() {
			defer close(done)
			adminStore.SampleUsage(sampling, logger, time.Now)
		}()
		defer func() { stop(); <-done }()
	}
	return rt.Serve(ctx)
}

// adminParts is what the admin API and its console share with the token
// service: its logger, Redis, signing-key authority, token verifier,
// trusted proxies, DPoP nonces, metrics, token endpoint (the console signs
// operators in there, in process) and tracing (every admin call in a span
// when set).
type adminParts struct {
	Logger  *slog.Logger
	Redis   redis.UniversalClient
	Keys    *signingkeys.Authority
	Tokens  *accesstoken.CachingVerifier
	Trust   clientip.Trust
	Nonces  admission.Nonces
	Metrics *metrics.Metrics
	Token   http.Handler
	Tracing *tracing.Tracing
}

// newAdmin wires the admin API and its operator console (nil when
// --admin-addr is off) from p, and returns them with the registry they
// write (its changes wait for the replicas REDIS_URL asks for, like the
// command line's), which also samples the console's usage history.
func newAdmin(cfg serveConfig, p adminParts) (http.Handler, *clients.Store, error) {
	if cfg.AdminAddr == httpserver.Off {
		return nil, nil, nil
	}
	confirm, err := redisconn.ConfirmationOf(cfg.RedisURL)
	if err != nil {
		return nil, nil, cli.AsUsage(err)
	}
	prefix := cfg.KeyPrefix
	store := clients.NewStore(p.Redis, prefix, nil)
	store.ConfirmWrites(confirm)
	withdrawals := keywithdrawal.NewStore(p.Redis, prefix)
	withdrawals.ConfirmWrites(confirm)
	base, err := cfg.adminBaseURL()
	if err != nil {
		return nil, nil, cli.AsUsage(err)
	}
	log := p.Logger.With("listener", "admin")
	ops := &operations.Service{Registry: store, Withdrawals: withdrawals, JWKS: cfg.JWKS}
	h, err := adminapi.NewServer(log, adminapi.Config{Trust: p.Trust, KeyPrefix: prefix, JWKSAllowHTTP: cfg.JWKS.AllowHTTP, PublicBaseURL: base},
		adminapi.Deps{Ops: ops, Tokens: p.Tokens, Admit: store, Keys: p.Keys, Redis: p.Redis, Nonces: p.Nonces, Metrics: p.Metrics, Tracing: p.Tracing,
			Console: func(api http.Handler) (http.Handler, error) {
				return console.New(log, console.Config{Trust: p.Trust},
					console.Deps{API: api, Token: p.Token, Tokens: p.Tokens, Usage: ops})
			}})
	return h, store, err
}
