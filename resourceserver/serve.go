package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/serverruntime"
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

// serve runs the resource server until ctx is cancelled: the shared
// runtime (package serverruntime) and what is the resource server's own,
// the token service's JWKS, the withdrawn keys and the API. It starts even
// when Redis or the JWKS cannot be reached yet: /readyz reports it and API
// requests answer 503 until they can.
func serve(ctx context.Context, cfg *config, env cli.Env) error {
	m := metrics.NewResourceServer(metrics.New("resourceserver"))
	rt, err := serverruntime.Open(ctx, cfg.Config, env, serverruntime.Options{Problems: cfg.problems(), Metrics: m.Metrics, Service: "resourceserver"})
	if err != nil {
		return err
	}
	defer rt.Close()
	logger := rt.Logger()

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
	withdrawals := watchWithdrawals(keysCtx, rt.Redis(), cfg.KeyPrefix, keys, logger)
	defer withdrawals.Close()

	docs, err := apidocs.New(cfg.BaseURL)
	if err != nil {
		return err
	}
	handler, err := api.NewServer(logger, api.Config{
		Issuer:        cfg.Issuer,
		Audience:      cfg.Audience,
		Trust:         cfg.Trust(),
		PublicBaseURL: cfg.BaseURL,
	}, api.Deps{
		Registry: rt.Registry(),
		Nonces:   rt.Nonces(),
		Keys:     keyAuthority{jwks: keys, withdrawals: withdrawals},
		Docs:     docs,
		Ready:    rt.Ready,
		Metrics:  m,
		Tracing:  rt.Tracing(),
	})
	if err != nil {
		return err
	}
	if err := rt.Listen(ctx, handler); err != nil {
		return err
	}
	addr := rt.Addr(httpserver.API)
	logger.Info("listening", slog.String("addr", addr.String()), slog.String("jwks_url", cfg.JWKSURL),
		slog.String("issuer", cfg.Issuer), slog.String("audience", cfg.Audience), slog.Bool("redis_autopipeline", rt.Pipelined()))
	fmt.Fprintf(env.Stdout, "resourceserver listening on http://%s\n", addr)
	return rt.Serve(ctx)
}
