package httpserver

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

// RequestIDHeader carries the request id both ways.
const RequestIDHeader = "X-Request-Id"

// DefaultMaxBodyBytes is Base's body limit when none is set.
const DefaultMaxBodyBytes = 64 << 10

// Base is the HTTP layer both servers put in front of their routes, plain
// net/http middleware (the resource server's Gin engine is mounted inside
// it). For every request it
//
//   - gives the request an id: the X-Request-Id of a trusted proxy when it is
//     sane to log (logging.AcceptRequestID), else a new random one; the id is
//     echoed in the answer and put in the context, where the logger of
//     logging.New adds it to every record of the request;
//   - caps the body at MaxBodyBytes (http.MaxBytesReader: a read past it
//     fails with *http.MaxBytesError, which the handler answers in its own
//     error shape, and the connection is closed after the answer);
//   - recovers a panic: it is logged with its stack, answered 500
//     {"detail":"internal error"} if nothing was written yet, and the process
//     and the connection carry on (http.ErrAbortHandler is passed on: it is
//     net/http's way to abort a response on purpose);
//   - tells the Observer (the HTTP metrics) of the answer: the route the
//     router set (SetRoute), the method, the status and the duration;
//   - with Tracing, runs the request in a server span named after its route
//     (package tracing), continuing the traceparent of a trusted proxy only
//     (the probes, /healthz and /readyz, get none);
//   - logs one access record: method, path, status, duration, client address,
//     the trace id of a sampled request and what handlers added with
//     Annotate; never the query string (it may hold a misplaced token) nor
//     any header value.
//
// Written once here so that both servers answer, count, log and limit
// alike, with one response writer that remembers the status for both the
// metrics and the access record.
type Base struct {
	Logger *slog.Logger
	// Trust names the proxies whose X-Request-Id and X-Forwarded-For count.
	Trust clientip.Trust
	// MaxBodyBytes caps request bodies (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Observer, when not nil, is told of every answer (a *metrics.Metrics).
	Observer Observer
	// Tracing, when not nil, starts a server span per request; nil (tracing
	// off) costs a request nothing (BenchmarkTokenEndpoint's allocs/op).
	Tracing *tracing.Tracing
}

// Observer is told of every answer served behind Base: its route pattern
// ("" when no route matched), method, status and duration.
type Observer interface {
	ObserveHTTP(route, method string, status int, d time.Duration)
}

// Wrap returns next behind the base layer.
func (b Base) Wrap(next http.Handler) http.Handler {
	if b.MaxBodyBytes <= 0 {
		b.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if b.Logger == nil {
		b.Logger = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(RequestIDHeader)
		if id == "" || !logging.AcceptRequestID(id) || !b.Trust.FromProxy(r) {
			id = logging.NewRequestID()
		}
		w.Header().Set(RequestIDHeader, id)
		rec := &record{ResponseWriter: w, status: http.StatusOK}
		ctx := context.WithValue(logging.WithRequestID(r.Context(), id), recordKey{}, rec)
		var span trace.Span
		if b.Tracing != nil {
			ctx, span = b.Tracing.StartRequest(ctx, r.Header, r.Method, r.URL.Path, id, b.Trust.FromProxy(r))
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, b.MaxBodyBytes) // w, not rec: it closes the connection through the server's own writer
		}
		defer func() {
			p := recover()
			if p != nil && p != http.ErrAbortHandler {
				b.Logger.LogAttrs(ctx, slog.LevelError, "panic", slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
				if !rec.wrote {
					internalError(rec)
				}
			}
			end := time.Now()
			if b.Observer != nil {
				b.Observer.ObserveHTTP(rec.route, r.Method, rec.status, end.Sub(start))
			}
			if span != nil {
				tracing.EndRequest(span, r.Method, rec.route, rec.status)
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			h := b.Logger.Handler()
			if !h.Enabled(ctx, slog.LevelInfo) {
				return
			}
			// The record goes to the handler directly, as log/slog's
			// documentation shows for wrappers: its pc 0 spares the
			// caller lookup (runtime.Callers) that Logger.LogAttrs makes
			// on every call for a source field no handler here writes,
			// and its clock reading is the duration's.
			ar := slog.NewRecord(end, slog.LevelInfo, "request", 0)
			ar.AddAttrs(slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", rec.status), slog.Duration("duration", end.Sub(start)),
				slog.String("client_ip", b.Trust.Of(r).String()))
			if span != nil {
				if tid := tracing.TraceID(span); tid != "" {
					ar.AddAttrs(slog.String("trace_id", tid))
				}
			}
			ar.AddAttrs(rec.annotations()...)
			_ = h.Handle(ctx, ar)
		}()
		next.ServeHTTP(rec, r.WithContext(ctx))
	})
}

// internalError is the answer to a panic.
func internalError(w http.ResponseWriter) {
	WriteDetail(w, http.StatusInternalServerError, http.Header{"Cache-Control": {"no-store"}}, "internal error")
}

type recordKey struct{}

// Annotate adds attributes to the access record of ctx's request (the
// authenticated client, say). An attribute whose key the record holds
// already replaces it, so the record names each key once: a console page
// that makes two admin API calls in process, each annotating its
// operator's client_id, logs one client_id (TestAnnotateOnce). Outside
// Base it does nothing.
func Annotate(ctx context.Context, attrs ...slog.Attr) {
	if rec, ok := ctx.Value(recordKey{}).(*record); ok {
		rec.mu.Lock()
		for _, a := range attrs {
			i := slices.IndexFunc(rec.attrs, func(b slog.Attr) bool { return b.Key == a.Key })
			if i >= 0 {
				rec.attrs[i] = a
			} else {
				rec.attrs = append(rec.attrs, a)
			}
		}
		rec.mu.Unlock()
	}
}

// SetRoute records the route pattern ctx's request matched
// ("/docs/:page", never "/docs/errors"), the metrics' route label. The
// router calls it (the resource server's Gin engine too, with its own
// pattern); outside Base it does nothing.
func SetRoute(ctx context.Context, pattern string) {
	if rec, ok := ctx.Value(recordKey{}).(*record); ok {
		rec.route = pattern
	}
}

// record is the response writer of a request under Base: it remembers the
// status for the metrics and the access record, the route the router set,
// and the attributes handlers added.
type record struct {
	http.ResponseWriter
	status int
	wrote  bool
	// route is set by SetRoute on the request's own goroutine, and read
	// there once the handler has returned.
	route string
	mu    sync.Mutex
	attrs []slog.Attr
}

func (r *record) annotations() []slog.Attr {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.attrs
}

func (r *record) WriteHeader(code int) {
	if !r.wrote && code >= 200 {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *record) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines,
// flushes) and lets http.MaxBytesReader close it after an oversized body.
func (r *record) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush passes flushes on (Gin's writer asks for an http.Flusher).
func (r *record) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
