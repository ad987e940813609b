package serverruntime

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/buildinfo"
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpopnonce"
	"github.com/partnerapi/authplatform/pkg/heapfloor"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/otlptracing"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

// Timeouts of the Redis checks.
const (
	// startPing bounds the check at start (Listen): a Redis that does not
	// answer by then is warned about, and the server serves all the same.
	startPing = 2 * time.Second
	// readyPing bounds the readiness check (Ready) of one /readyz.
	readyPing = time.Second
)

// Options are what a binary gives Open beside the shared configuration.
type Options struct {
	// Problems are the binary's own configuration problems, reported
	// with the shared ones (serveconfig.Config.Check).
	Problems []error
	// Metrics is the binary's registry (required): it counts the Redis
	// commands (its hook on the client and on the pipelined scripts'
	// clients) and the metrics listener serves it.
	Metrics *metrics.Metrics
	// Service is the traces' service.name unless OTEL_SERVICE_NAME says
	// otherwise ("authserver", "resourceserver"; "" is "partnerapi").
	Service string
}

// Runtime is a serving process's shared resources, from Open to Close. Its
// methods are not for concurrent use, but for the resources they return.
type Runtime struct {
	cfg       serveconfig.Config
	logger    *slog.Logger
	rdb       redis.UniversalClient
	registry  *clients.Store
	pipelined bool
	nonces    *dpopnonce.Shared
	tracing   *tracing.Tracing
	group     *httpserver.Group
	// draining is set when Serve's ctx ends, for the shutdown delay before
	// the listeners close: Ready then fails.
	draining atomic.Bool
	// closers undo what Open opened, in the order of opening; Close runs
	// them in reverse.
	closers []func()
}

// Open checks cfg, the tracing's OTEL_* variables (package tracing) and
// the binary's own problems (one usage error naming every problem) and
// opens, in order: the logger writing to env.Stderr, the heap floor
// (unless GOGC is set), the tracing (when an OTLP endpoint is set), the
// Redis client of cfg.RedisURL with opt.Metrics's hook and the tracing's,
// the client registry (automatically pipelined unless REDIS_AUTOPIPELINE
// says otherwise) and, with DPOP_NONCES, the nonces of the secret every
// replica shares in Redis with their watcher. Open does not wait for
// Redis but for the nonces' secret. A failure closes what was opened;
// else the caller closes the Runtime.
func Open(ctx context.Context, cfg serveconfig.Config, env cli.Env, opt Options) (_ *Runtime, err error) {
	if opt.Service == "" {
		opt.Service = "partnerapi"
	}
	tcfg, terr := tracing.ParseConfig(env.Getenv, opt.Service)
	problems := opt.Problems
	if terr != nil {
		problems = append(append([]error(nil), problems...), terr)
	}
	if err := cfg.Check(problems...); err != nil {
		return nil, err
	}
	r := &Runtime{cfg: cfg}
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	if err := r.openLogger(env.Stderr); err != nil {
		return nil, err
	}
	// The collector's heap goal kept at 20 MiB or more while serving,
	// unless GOGC is set (package heapfloor).
	r.closers = append(r.closers, heapfloor.Start(ctx, env.Getenv))
	if err := r.openTracing(ctx, tcfg); err != nil {
		return nil, err
	}
	rdb, err := redisconn.Open(cfg.RedisURL)
	if err != nil {
		return nil, cli.AsUsage(err)
	}
	r.rdb = rdb
	r.closers = append(r.closers, func() { _ = rdb.Close() })
	hook := opt.Metrics.RedisHook()
	rdb.AddHook(hook)
	if err := r.tracing.InstrumentRedis(rdb); err != nil {
		return nil, err
	}
	r.registry = clients.NewStore(rdb, cfg.KeyPrefix, nil)
	if r.tracing != nil {
		r.registry.TraceSampled()
	}
	if r.pipelined = cfg.AutoPipeline.On(); r.pipelined {
		// The metrics hook for the pipelined scripts too: on a Cluster
		// they run on clients of their own (redisconn.PrimaryPipes).
		if err := r.registry.UseAutoPipeline(hook); err != nil {
			return nil, err
		}
		r.closers = append(r.closers, func() { _ = r.registry.Close() })
	}
	if cfg.DPoPNonces {
		if err := r.openNonces(ctx); err != nil {
			return nil, err
		}
	}
	r.group = httpserver.NewGroup(r.logger, opt.Metrics)
	r.closers = append(r.closers, r.group.Close)
	return r, nil
}

// openLogger opens the process's logger: JSON records to w through a
// logging.BatchWriter (the access log's records share write(2)s under
// load), go-redis's own lines through it too (the one place a serving
// process sets go-redis's process-wide logger). Closing writes what is
// pending.
func (r *Runtime) openLogger(w io.Writer) error {
	logs := logging.NewBatchWriter(w)
	logger, err := logging.New(logs, r.cfg.LogLevel)
	if err != nil {
		logs.Close()
		return cli.AsUsage(err)
	}
	redisconn.SetLogger(logger)
	r.logger = logger
	r.closers = append(r.closers, func() { logs.Close() })
	return nil
}

// openTracing opens the tracing of cfg (nil when it is off: nothing is
// opened and no request pays for it) and, at Close, flushes the spans
// still queued before the logger closes.
func (r *Runtime) openTracing(ctx context.Context, cfg tracing.Config) error {
	t, err := otlptracing.Open(ctx, cfg, buildinfo.Read().Version, r.logger)
	if err != nil {
		return cli.AsUsage(err)
	}
	if t == nil {
		return nil
	}
	r.tracing = t
	r.closers = append(r.closers, func() {
		if err := t.Close(); err != nil {
			r.logger.Warn("tracing: spans not flushed", "err", err)
		}
	})
	r.logger.Info("tracing on", slog.String("service", cfg.Service), slog.String("protocol", cfg.Protocol),
		slog.String("sampler", cfg.Sampler), slog.Float64("sampler_arg", cfg.SamplerArg))
	return nil
}

// openNonces reads (or creates) the shared DPoP nonce secret (package
// dpopnonce: the token endpoint and both APIs require its nonces alike)
// and watches it until Close, whatever ctx does: the nonces stay current
// while the listeners drain after ctx ends.
func (r *Runtime) openNonces(ctx context.Context) error {
	shared, err := dpopnonce.SharedNonces(ctx, r.rdb, r.cfg.KeyPrefix)
	if err != nil {
		return err
	}
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		shared.Watch(watchCtx, r.logger)
	}()
	r.nonces = shared
	r.closers = append(r.closers, func() { stop(); <-done })
	return nil
}

// Logger is the process's logger.
func (r *Runtime) Logger() *slog.Logger { return r.logger }

// Tracing is the process's tracing, nil when it is off (the servers' base
// layer then starts no span: httpserver.Base.Tracing).
func (r *Runtime) Tracing() *tracing.Tracing { return r.tracing }

// Redis is the process's Redis client, with the metrics hook.
func (r *Runtime) Redis() redis.UniversalClient { return r.rdb }

// Registry is the client registry the servers' requests use: its
// per-request scripts pipelined when Pipelined.
func (r *Runtime) Registry() *clients.Store { return r.registry }

// Pipelined reports whether the registry's per-request scripts go through
// go-redis's automatic pipelining (serveconfig.Pipelining).
func (r *Runtime) Pipelined() bool { return r.pipelined }

// Nonces are the shared DPoP server nonces, or nil with DPOP_NONCES off: a
// nil interface, never a nil *dpopnonce.Shared in one, which would read
// as nonces on.
func (r *Runtime) Nonces() admission.Nonces {
	if r.nonces == nil {
		return nil
	}
	return r.nonces
}

// Ready is the Redis part of a server's readiness (/readyz): Redis (every
// primary of a Cluster) answers within a second.
// While the process drains (Serve's shutdown delay) it fails, whatever
// Redis does, so that the proxies in front stop sending requests before
// the listeners close.
func (r *Runtime) Ready(ctx context.Context) error {
	if r.draining.Load() {
		return errDraining
	}
	return redisconn.Ready(ctx, r.rdb, readyPing)
}

// errDraining is Ready's answer during the shutdown delay.
var errDraining = errors.New("shutting down")

// Listener is one of a binary's own listeners (the admin API): its name
// (httpserver.Admin), its address (httpserver.Off binds nothing) and its
// handler.
type Listener struct {
	Name    string
	Addr    string
	Handler http.Handler
}

// Listen binds, before any is served, the API listener (--addr, at most
// --max-conns connections at once) for api, the metrics listener
// (--metrics-addr, with the profiles under --pprof) and own, so that an
// address in use fails the start rather than a later request. It then
// checks that Redis answers, and warns when it does not yet: the servers
// serve all the same and answer 503 until it does.
func (r *Runtime) Listen(ctx context.Context, api http.Handler, own ...Listener) error {
	g := r.group
	// With --tls-cert, the API and the binary's own listeners end TLS,
	// asking for client certificates (serveconfig.TLS.ServerConfig); the
	// metrics listener stays plain, for the scraper on the host.
	tcfg, err := r.cfg.TLS.ServerConfig()
	if err != nil {
		return cli.AsUsage(err)
	}
	apiOpts := []httpserver.Option{httpserver.MaxConns(r.cfg.MaxConns)}
	var ownOpts []httpserver.Option
	if tcfg != nil {
		apiOpts = append(apiOpts, httpserver.TLS(tcfg))
		ownOpts = append(ownOpts, httpserver.TLS(tcfg))
	}
	if _, err := g.Listen(httpserver.API, r.cfg.Addr, apiOpts...); err != nil {
		return err
	}
	g.Handle(httpserver.API, api)
	if _, err := g.ListenMetrics(r.cfg.MetricsAddr, r.cfg.Profiling); err != nil {
		return err
	}
	for _, l := range own {
		if _, err := g.Listen(l.Name, l.Addr, ownOpts...); err != nil {
			return err
		}
		g.Handle(l.Name, l.Handler)
	}
	if err := redisconn.Ping(ctx, r.rdb, startPing); err != nil {
		r.logger.Warn("redis does not answer yet; requests get 503 until it does", "err", err)
	}
	return nil
}

// Addr is the address the listener called name (httpserver.API, Admin,
// Metrics) is bound to, nil when it is off or not bound.
func (r *Runtime) Addr(name string) net.Addr { return r.group.Addr(name) }

// Serve serves every bound listener until ctx ends or one fails, then
// shuts them down together (httpserver.Group.Serve): nil after a clean
// shutdown.
//
// With a shutdown delay (--shutdown-delay), the end of ctx first makes
// Ready fail and the listeners keep serving for the delay: a proxy's
// active health check (the edge's /readyz every HEALTH_INTERVAL,
// deploy/Caddyfile) takes the replica out of rotation while it still
// answers, so no request is sent to a closed port. Retrying a request
// elsewhere after a refused dial is not enough: Caddy before 2.11.2 sends a
// retried request's body empty (caddyserver/caddy#7546). Measured by
// deploy/e2e/topology's TestRollingRestart.
func (r *Runtime) Serve(ctx context.Context) error {
	delay := r.cfg.ShutdownDelay
	if delay <= 0 {
		return r.group.Serve(ctx)
	}
	serveCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	go func() {
		select {
		case <-ctx.Done():
		case <-serveCtx.Done():
			return
		}
		r.draining.Store(true)
		r.logger.Info("draining: /readyz answers 503 until the listeners close", "delay", delay.String())
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-serveCtx.Done():
		}
		stop()
	}()
	return r.group.Serve(serveCtx)
}

// Close closes what Open opened, in the reverse order: the listeners (if
// Serve did not run), the nonces' watcher, the pipelined scripts'
// clients, the Redis client, the tracing (its queued spans flushed), the
// heap floor, and last the logger, after writing what it holds. It may be called more than once.
func (r *Runtime) Close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
	r.closers = nil
}
