package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpopnonce"
	"github.com/partnerapi/authplatform/pkg/heapfloor"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/resourceserver/api"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
	"github.com/partnerapi/authplatform/resourceserver/jwks"
)

// shutdownTimeout bounds how long the key cache may take to stop.
const shutdownTimeout = 10 * time.Second

func serveCommand(fs *flag.FlagSet, env cli.Env) cli.Action {
	cfg := &config{}
	finish := cfg.declareFlags(fs, env.Getenv)
	return func(ctx context.Context, _ []string) error {
		if err := finish(); err != nil {
			return err
		}
		return serve(ctx, cfg, env)
	}
}

// serve runs the resource server until ctx is cancelled. It starts even
// when Redis or the JWKS cannot be reached yet: /readyz reports it and API
// requests answer 503 until they can.
func serve(ctx context.Context, cfg *config, env cli.Env) error {
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
	m := metrics.NewResourceServer(metrics.New("resourceserver"))

	rdb, err := redisconn.Open(cfg.RedisURL)
	if err != nil {
		return cli.AsUsage(err)
	}
	defer rdb.Close()
	rdb.AddHook(m.RedisHook())

	// The key cache lives until serve returns.
	keysCtx, stopKeys := context.WithCancel(context.WithoutCancel(ctx))
	defer stopKeys()
	keys, err := jwks.New(keysCtx, cfg.JWKSURL, jwks.Options{
		Logger:     logger,
		HTTPClient: &http.Client{Timeout: jwks.DefaultFetchTimeout, Transport: m.JWKSTransport(nil)},
	})
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = keys.Close(sctx)
	}()

	// Withdrawn signing keys (authserver keys withdraw): refused from the
	// moment the notice arrives, and the JWKS fetched again. The JWKS and
	// the withdrawn kids are the server's key authority (keyAuthority).
	withdrawals := watchWithdrawals(keysCtx, rdb, cfg.KeyPrefix, keys, logger)
	defer withdrawals.Close()

	docs, err := apidocs.New(cfg.BaseURL)
	if err != nil {
		return err
	}
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
	var nonces admission.Nonces
	if cfg.DPoPNonces {
		shared, err := dpopnonce.SharedNonces(ctx, rdb, cfg.KeyPrefix)
		if err != nil {
			return err
		}
		go shared.Watch(keysCtx, logger)
		nonces = shared
	}
	handler, err := api.NewServer(logger, api.Config{
		Issuer:        cfg.Issuer,
		Audience:      cfg.Audience,
		Trust:         cfg.Trust(),
		PublicBaseURL: cfg.BaseURL,
	}, api.Deps{
		Registry: registry,
		Nonces:   nonces,
		Keys:     keyAuthority{jwks: keys, withdrawals: withdrawals},
		Docs:     docs,
		Ready:    func(ctx context.Context) error { return redisconn.Ready(ctx, rdb, time.Second) },
		Metrics:  m,
	})
	if err != nil {
		return err
	}

	g := httpserver.NewGroup(logger, m.Metrics)
	if err := cfg.Listen(g); err != nil {
		return err
	}
	g.Handle(httpserver.API, handler)
	addr := g.Addr(httpserver.API)
	logger.Info("listening", slog.String("addr", addr.String()), slog.String("jwks_url", cfg.JWKSURL),
		slog.String("issuer", cfg.Issuer), slog.String("audience", cfg.Audience), slog.Bool("redis_autopipeline", pipelined))
	fmt.Fprintf(env.Stdout, "resourceserver listening on http://%s\n", addr)
	return g.Serve(ctx)
}
