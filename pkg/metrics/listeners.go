package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// Listeners are the sockets of a serving binary: its API and, unless its
// address is Off, its metrics. Both binaries bind them before they announce
// themselves, so a port in use fails the start instead of a later request.
type Listeners struct {
	API     net.Listener
	Metrics net.Listener // nil when off
}

// ListenAll binds addr for the API and metricsAddr (host:port or Off) for
// the metrics. On an error nothing stays bound.
func ListenAll(addr, metricsAddr string) (Listeners, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return Listeners{}, fmt.Errorf("listen on %s: %w", addr, err)
	}
	mln, err := Listen(metricsAddr)
	if err != nil {
		ln.Close()
		return Listeners{}, fmt.Errorf("listen on %s (metrics): %w", metricsAddr, err)
	}
	return Listeners{API: ln, Metrics: mln}, nil
}

// Close closes both listeners, for a start that fails after ListenAll.
func (l Listeners) Close() {
	l.API.Close()
	if l.Metrics != nil {
		l.Metrics.Close()
	}
}

// ServeWith serves h, counted by Middleware, on l.API (httpserver.Serve)
// and, unless l.Metrics is nil, the metrics on l.Metrics, until ctx ends.
// The metrics listener outlives the API's graceful shutdown, so that a last
// scrape sees the final counts, and stops right after it.
func (m *Metrics) ServeWith(ctx context.Context, l Listeners, h http.Handler, logger *slog.Logger, opts ...httpserver.Option) error {
	h = m.Middleware(h)
	if l.Metrics == nil {
		return httpserver.Serve(ctx, l.API, h, logger, opts...)
	}
	mctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	done := make(chan error, 1)
	logger.Info("metrics listening", slog.String("addr", l.Metrics.Addr().String()), slog.String("path", Path))
	go func() { done <- m.Serve(mctx, l.Metrics, logger) }()
	err := httpserver.Serve(ctx, l.API, h, logger, opts...)
	stop()
	if merr := <-done; err == nil && merr != nil {
		err = fmt.Errorf("metrics: %w", merr)
	}
	return err
}
