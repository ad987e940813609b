package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// serveConfig is the configuration of `authserver serve`, from flags over
// environment variables over defaults.
type serveConfig struct {
	Addr           string
	KeysFile       string
	Issuer         string
	Audience       string
	RedisURL       string
	TrustedProxies string
	LogLevel       string
	// AcceptLegacySecrets: see tokenserver.Config.AcceptLegacySecrets.
	AcceptLegacySecrets bool
	MaxConns            int // 0: httpserver.DefaultMaxConns (from RLIMIT_NOFILE)
}

func (c serveConfig) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("--addr (ADDR) is required"))
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
	if c.MaxConns < 0 {
		errs = append(errs, errors.New("--max-conns (MAX_CONNS) must not be negative"))
	}
	return errors.Join(errs...)
}

func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := serveConfig{}
	fs := newFlags("serve")
	fs.StringVar(&cfg.Addr, "addr", envOr(getenv, "ADDR", ":8080"), "listen address")
	fs.StringVar(&cfg.KeysFile, "keys", getenv("KEYS_FILE"), "JWK set file of signing keys")
	fs.StringVar(&cfg.Issuer, "issuer", envOr(getenv, "ISSUER", "http://localhost:8080"), "token issuer (iss) and public base URL")
	fs.StringVar(&cfg.Audience, "audience", envOr(getenv, "AUDIENCE", "partner-api"), "token audience (aud)")
	fs.StringVar(&cfg.RedisURL, "redis-url", getenv("REDIS_URL"), "Redis URL")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", getenv("TRUSTED_PROXIES"), "comma-separated proxy CIDRs whose forwarded headers are trusted")
	fs.StringVar(&cfg.LogLevel, "log-level", getenv("LOG_LEVEL"), "debug, info, warn or error")
	fs.BoolVar(&cfg.AcceptLegacySecrets, "accept-legacy-secrets", getenv("ACCEPT_LEGACY_SECRETS") == "true",
		"also accept client secrets issued before checksums (until every such client is rotated)")
	maxConns := fs.String("max-conns", getenv("MAX_CONNS"), "connections served at once (default: from the open file limit)")
	if pos, err := parseFlags(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("serve takes no arguments")
	}
	if *maxConns != "" {
		n, err := strconv.Atoi(*maxConns)
		if err != nil {
			return usagef("--max-conns (MAX_CONNS) %q: want a number", *maxConns)
		}
		cfg.MaxConns = n
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	logger, err := logging.New(stderr, cfg.LogLevel)
	if err != nil {
		return usageError{err.Error()}
	}
	keys, err := accesstoken.LoadKeySet(cfg.KeysFile)
	if err != nil {
		return err
	}
	rdb, err := redisconn.Open(cfg.RedisURL)
	if err != nil {
		return usageError{err.Error()}
	}
	defer rdb.Close()
	trust, _ := clientip.ParseTrust(cfg.TrustedProxies)
	h, err := tokenserver.NewServer(logger, tokenserver.Config{Issuer: cfg.Issuer, Audience: cfg.Audience, Trust: trust, KeyPrefix: getenv("REDIS_KEY_PREFIX"),
		AcceptLegacySecrets: cfg.AcceptLegacySecrets},
		tokenserver.Deps{
			Registry: clients.NewStore(rdb, getenv("REDIS_KEY_PREFIX"), nil),
			Keys:     keys,
			Ready:    func(ctx context.Context) error { return redisconn.Ready(ctx, rdb, time.Second) },
		})
	if err != nil {
		return err
	}
	defer watchWithdrawals(ctx, rdb, getenv("REDIS_KEY_PREFIX"), cfg.KeysFile, keys, h, logger).Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	if err := redisconn.Ping(ctx, rdb, 2*time.Second); err != nil {
		logger.Warn("redis does not answer yet; requests get 503 until it does", "err", err)
	}
	logger.Info("token service listening", "addr", ln.Addr().String(), "issuer", cfg.Issuer, "signing_kid", keys.SigningKeyID())
	fmt.Fprintf(stdout, "authserver listening on http://%s\n", ln.Addr())
	return httpserver.Serve(ctx, ln, h, logger, httpserver.MaxConns(cfg.MaxConns))
}
