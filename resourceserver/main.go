package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/resourceserver/api"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
	"github.com/partnerapi/authplatform/resourceserver/jwks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "resourceserver: %v\n", err)
		os.Exit(1)
	}
}

const usage = `Usage: resourceserver <command> [flags]

Commands:
  serve [--addr :8081] [--jwks-url URL] [--issuer URL] [--audience A] ...
          answer the partner API (GET /api/v1/me/) and the documentation
  healthcheck [--url URL]
          exit 0 when the server's /readyz answers 200 (container probes)

Run "resourceserver serve -h" for the flags of serve.
`

// run is the whole program: args as in os.Args, the environment through
// getenv. It returns when the command is done or, for serve, when ctx is
// cancelled (SIGINT, SIGTERM) and the server has shut down.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[1] {
	case "serve":
		return serve(ctx, args[2:], getenv, stdout, stderr)
	case "healthcheck":
		return healthcheck(ctx, args[2:], getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", args[1])
	}
}

// Defaults (contract notes: binaries, flags and environment).
const (
	defaultAddr     = ":8081"
	defaultJWKSURL  = "http://localhost:8080/.well-known/jwks.json"
	defaultIssuer   = "http://localhost:8080"
	defaultAudience = "partner-api"
)

// shutdownTimeout bounds how long in-flight requests may finish on SIGTERM.
const shutdownTimeout = 10 * time.Second

// config is the configuration of serve: each field from its flag, else its
// environment variable, else its default.
type config struct {
	Addr           string // --addr, ADDR
	JWKSURL        string // --jwks-url, JWKS_URL
	Issuer         string // --issuer, ISSUER
	Audience       string // --audience, AUDIENCE
	RedisURL       string // --redis-url, REDIS_URL (prefer the environment: flags show in ps)
	KeyPrefix      string // REDIS_KEY_PREFIX: prefix of every Redis key (shared instances, tests)
	TrustedProxies string // --trusted-proxies, TRUSTED_PROXIES: comma-separated CIDRs or addresses
	LogLevel       string // --log-level, LOG_LEVEL: debug, info, warn or error
	BaseURL        string // --base-url, BASE_URL: public address written into the documentation
	MaxConns       int    // --max-conns, MAX_CONNS: connections served at once (0: from the open file limit)

	// Parsed by Validate.
	trust clientip.Trust
}

// parseConfig reads serve's flags over the environment.
func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	env := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	var cfg config
	fs := flag.NewFlagSet("resourceserver serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", env("ADDR", defaultAddr), "listen address (env ADDR)")
	fs.StringVar(&cfg.JWKSURL, "jwks-url", env("JWKS_URL", defaultJWKSURL), "the token service's JWKS (env JWKS_URL)")
	fs.StringVar(&cfg.Issuer, "issuer", env("ISSUER", defaultIssuer), `"iss" of accepted tokens (env ISSUER)`)
	fs.StringVar(&cfg.Audience, "audience", env("AUDIENCE", defaultAudience), `"aud" of accepted tokens (env AUDIENCE)`)
	// Not defaulted from the environment like the others: -h would print
	// the URL's password.
	fs.StringVar(&cfg.RedisURL, "redis-url", "", "Redis URL (env REDIS_URL, preferred: flags are visible in ps; default "+redisconn.DefaultURL+")")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", env("TRUSTED_PROXIES", ""), "comma-separated CIDRs of trusted reverse proxies (env TRUSTED_PROXIES)")
	fs.StringVar(&cfg.LogLevel, "log-level", env("LOG_LEVEL", "info"), "debug, info, warn or error (env LOG_LEVEL)")
	fs.StringVar(&cfg.BaseURL, "base-url", env("BASE_URL", ""), "public base URL written into the documentation ({base_url}) and its links; empty: derived from each request (env BASE_URL)")
	maxConns := fs.String("max-conns", env("MAX_CONNS", ""), "connections served at once; default from the open file limit (env MAX_CONNS)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if *maxConns != "" {
		n, err := strconv.Atoi(*maxConns)
		if err != nil || n < 0 {
			return config{}, fmt.Errorf("max-conns %q: want a number, 0 or more", *maxConns)
		}
		cfg.MaxConns = n
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if cfg.RedisURL == "" {
		cfg.RedisURL = env("REDIS_URL", redisconn.DefaultURL)
	}
	cfg.KeyPrefix = getenv("REDIS_KEY_PREFIX")
	return cfg, nil
}

// Validate checks every setting and reports every problem at once.
func (c *config) Validate() error {
	var errs []error
	if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		errs = append(errs, fmt.Errorf("addr %q: want host:port or :port", c.Addr))
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
	if rdb, err := redisconn.Open(c.RedisURL); err != nil {
		errs = append(errs, err) // names REDIS_URL, never its content
	} else {
		_ = rdb.Close()
	}
	trust, err := clientip.ParseTrust(c.TrustedProxies)
	if err != nil {
		errs = append(errs, err) // names the entry: trusted proxy "x": ...
	}
	c.trust = trust
	if _, err := logging.New(io.Discard, c.LogLevel); err != nil {
		errs = append(errs, err) // log level "x": use debug, ...
	}
	if c.BaseURL != "" {
		if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("base-url %q: want an absolute http or https URL", c.BaseURL))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid configuration:\n  %w", joinIndented(errs))
	}
	return nil
}

// joinIndented joins errors one per line.
func joinIndented(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "\n  "))
}

// serve runs the resource server until ctx is cancelled. It starts even
// when Redis or the JWKS cannot be reached yet: /readyz reports it and API
// requests answer 503 until they can.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	logger, err := logging.New(stderr, cfg.LogLevel)
	if err != nil {
		return err
	}

	rdb, err := redisconn.Open(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()

	// The key cache lives until serve returns.
	keysCtx, stopKeys := context.WithCancel(context.WithoutCancel(ctx))
	defer stopKeys()
	keys, err := jwks.New(keysCtx, cfg.JWKSURL, jwks.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = keys.Close(sctx)
	}()

	// Withdrawn signing keys (authserver keys withdraw): refused from the
	// moment the notice arrives, and the JWKS fetched again.
	withdrawals := watchWithdrawals(keysCtx, rdb, cfg.KeyPrefix, keys, logger)
	defer withdrawals.Close()

	docs, err := apidocs.New(cfg.BaseURL)
	if err != nil {
		return err
	}
	handler := api.NewServer(logger, api.Config{
		Issuer:         cfg.Issuer,
		Audience:       cfg.Audience,
		TrustedProxies: cfg.trust,
	}, api.Deps{
		Clients: clients.NewStore(rdb, cfg.KeyPrefix, nil),
		Keys:    withdrawals.Filter(keys),
		Docs:    docs,
		Redis:   rdb,
	})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logger.Info("listening", slog.String("addr", ln.Addr().String()), slog.String("jwks_url", cfg.JWKSURL),
		slog.String("issuer", cfg.Issuer), slog.String("audience", cfg.Audience))
	fmt.Fprintf(stdout, "resourceserver listening on http://%s\n", ln.Addr())
	return httpserver.Serve(ctx, ln, handler, logger, httpserver.MaxConns(cfg.MaxConns))
}

// healthcheck probes the local server's /readyz, for container health checks
// in images without a shell or curl: it returns nil when the URL answers
// 200. The default URL uses HEALTHCHECK_PORT, else the port of ADDR (the
// serve setting the container shares), else 8081.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	port := getenv("HEALTHCHECK_PORT")
	if port == "" {
		if _, p, err := net.SplitHostPort(getenv("ADDR")); err == nil && p != "" {
			port = p
		} else {
			port = "8081"
		}
	}
	fs := flag.NewFlagSet("resourceserver healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	target := fs.String("url", "http://127.0.0.1:"+port+"/readyz", "URL that must answer 200")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return errors.New("healthcheck takes no arguments")
	}
	if err := httpserver.Probe(ctx, *target); err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
