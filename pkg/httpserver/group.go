package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/partnerapi/authplatform/pkg/metrics"
)

// Off as a listen address turns that listener off (metrics, admin API).
const Off = "off"

// ValidAddr reports whether addr is host:port (":port" included) with a
// numeric port, or Off.
func ValidAddr(addr string) bool {
	if addr == Off {
		return true
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
}

// Names of the listeners a binary opens: the log's "listener" attribute
// and the prefix of a listener's errors. The API's records carry none, as
// they always have.
const (
	API     = "api"
	Admin   = "admin"
	Metrics = "metrics"
)

// Group is the listeners of one process, served together: the API, the
// metrics and (token service) the admin API. Every listener is bound
// before any is served, so that a port in use fails the start instead of a
// later request; Serve serves them until ctx ends, then shuts them down
// together (Serve's graceful shutdown), the metrics listener last, so
// that a last scrape sees the final counts. When one fails, the others
// shut down.
type Group struct {
	logger  *slog.Logger
	metrics *metrics.Metrics
	members []*member
}

type member struct {
	name    string
	ln      net.Listener
	handler http.Handler
	opts    []Option
}

// NewGroup returns an empty group logging to logger. With m,
// ListenMetrics serves m's registry; the other listeners' answers are
// counted by their handlers' base layer (Base.Observer: the servers give
// it the same m).
func NewGroup(logger *slog.Logger, m *metrics.Metrics) *Group {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Group{logger: logger, metrics: m}
}

// Listen binds addr for the listener called name (API, Admin), to serve
// what Handle gives it with opts. Off binds nothing and returns a nil
// address. A failure names the address and, but for the API, the listener.
func (g *Group) Listen(name, addr string, opts ...Option) (net.Addr, error) {
	if addr == Off {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if name != API {
			return nil, fmt.Errorf("listen on %s (%s): %w", addr, name, err)
		}
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	g.members = append(g.members, &member{name: name, ln: ln, opts: opts})
	return ln.Addr(), nil
}

// ListenMetrics binds addr (or nothing for Off) for GET /metrics of the
// group's registry and, with profiling, the Go runtime's profiles under
// ProfilesPath (ProfileRoutes).
func (g *Group) ListenMetrics(addr string, profiling bool) (net.Addr, error) {
	if g.metrics == nil {
		return nil, errors.New("httpserver: a group without metrics has no metrics listener")
	}
	a, err := g.Listen(Metrics, addr)
	if err == nil && a != nil {
		routes := []Route{{Pattern: http.MethodGet + " " + metrics.Path, Handler: g.metrics.Handler()}}
		if profiling {
			routes = append(routes, ProfileRoutes()...)
		}
		g.Handle(Metrics, NewRouter(routes, DetailMisrouted))
	}
	return a, err
}

// Handle gives the listener called name its handler; a listener that is
// off is left alone.
func (g *Group) Handle(name string, h http.Handler) {
	for _, m := range g.members {
		if m.name == name {
			m.handler = h
		}
	}
}

// Close closes every bound listener, for a start that fails before Serve.
func (g *Group) Close() {
	for _, m := range g.members {
		m.ln.Close()
	}
}

// Serve serves every listener until ctx ends or one fails, and returns
// when all are shut down: nil after a clean shutdown, else the first
// failure, named by its listener.
func (g *Group) Serve(ctx context.Context) error {
	for _, m := range g.members {
		if m.handler == nil {
			g.Close()
			return fmt.Errorf("httpserver: listener %s has no handler", m.name)
		}
	}
	eg, gctx := errgroup.WithContext(ctx)
	// The metrics listener stops once every other listener has stopped.
	lastCtx, stopLast := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLast()
	var others sync.WaitGroup
	for _, m := range g.members {
		logger, mctx := g.logger, gctx
		if m.name != API {
			logger = logger.With(slog.String("listener", m.name))
		}
		if m.name == Metrics {
			mctx = lastCtx
			logger.Info("metrics listening", slog.String("addr", m.ln.Addr().String()), slog.String("path", metrics.Path))
		} else {
			others.Add(1)
		}
		eg.Go(func() error {
			if m.name != Metrics {
				defer others.Done()
			}
			err := Serve(mctx, m.ln, m.handler, logger, m.opts...)
			if err != nil && m.name != API {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			return err
		})
	}
	go func() {
		others.Wait()
		stopLast()
	}()
	return eg.Wait()
}

// Addr is the address the listener called name is bound to, nil when it is
// off.
func (g *Group) Addr(name string) net.Addr {
	for _, m := range g.members {
		if m.name == name {
			return m.ln.Addr()
		}
	}
	return nil
}
