package httpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// MaxHeaderBytes caps request headers; larger ones get 431 from net/http.
const MaxHeaderBytes = 32 << 10

// ShutdownTimeout bounds how long in-flight requests may finish on shutdown.
const ShutdownTimeout = 10 * time.Second

// Serve serves h on ln until ctx ends, then shuts down gracefully: no new
// connections, in-flight requests get up to ShutdownTimeout. It returns nil
// after a clean shutdown.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// Probe GETs url and returns nil when it answers 200 within 3 seconds: the
// health check of images that have no shell or curl.
func Probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("probe %s: answered %d", url, resp.StatusCode)
	}
	return nil
}

// ProbeURL is the default URL of a binary's healthcheck command: /readyz on
// loopback at HEALTHCHECK_PORT, else at the port of ADDR (the serve setting
// a container shares with its health check), else at defaultPort.
func ProbeURL(getenv func(string) string, defaultPort string) string {
	port := getenv("HEALTHCHECK_PORT")
	if port == "" {
		if _, p, err := net.SplitHostPort(getenv("ADDR")); err == nil && p != "" {
			port = p
		} else {
			port = defaultPort
		}
	}
	return "http://127.0.0.1:" + port + "/readyz"
}

// Healthcheck is the healthcheck command of both binaries, for container
// health checks in images without a shell or curl: it prints "ok" when url
// answers 200 and returns an error otherwise.
func Healthcheck(ctx context.Context, url string, stdout io.Writer) error {
	if err := Probe(ctx, url); err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
