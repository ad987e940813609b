package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of the servers' own spans.
const ScopeName = "github.com/partnerapi/authplatform"

// Attribute keys the servers set. Span names and these are the whole
// vocabulary: deploy/docs/tracing.md lists them, and what is never
// recorded.
const (
	AttrMethod    = attribute.Key("http.request.method")       // OpenTelemetry semantic conventions
	AttrRoute     = attribute.Key("http.route")                // the route's pattern, never the raw path
	AttrStatus    = attribute.Key("http.response.status_code") // the answer's status
	AttrRequestID = attribute.Key("partnerapi.request_id")     // the access record's request_id
)

// Names of the servers' own child spans (Start), beside the server spans
// ("POST /api/v1/oauth/token/") and go-redis's ("evalsha").
const (
	SpanSign         = "token.sign"     // the token service signs an access token
	SpanVerify       = "token.verify"   // a token's signature checked (not a cached token)
	SpanJWKSURIFetch = "jwks_uri.fetch" // a private_key_jwt client's jwks_uri fetched
)

// AttrServerAddress is a jwks_uri fetch's host: never its path or query.
const AttrServerAddress = attribute.Key("server.address")

// shutdownTimeout bounds the flush of the spans still queued at Close.
const shutdownTimeout = 5 * time.Second

// Tracing is a process's tracing: its tracer provider, the server spans'
// tracer and the W3C Trace Context propagator. A nil *Tracing is tracing
// off, and every method of a nil *Tracing does nothing.
type Tracing struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
	prop     propagation.TraceContext
	shutdown func(context.Context) error
}

// New is tracing through tp, a provider its caller owns and shuts down
// (tests and benchmarks: an SDK provider with a recorder or a sampler of
// their own).
func New(tp trace.TracerProvider) *Tracing {
	return &Tracing{provider: tp, tracer: tp.Tracer(ScopeName)}
}

// NewClosing is New for a provider this Tracing owns: Close calls
// shutdown, which flushes and stops its exporter (package otlptracing's
// Open).
func NewClosing(tp trace.TracerProvider, shutdown func(context.Context) error) *Tracing {
	t := New(tp)
	t.shutdown = shutdown
	return t
}

// Close flushes the queued spans (at most shutdownTimeout) and stops the
// exporter of a Tracing from NewClosing. A Tracing from New is its
// caller's to shut down.
func (t *Tracing) Close() error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := t.shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("tracing: %w", err)
	}
	return nil
}

// StartRequest starts the server span of a request (kind server, named
// after its method until EndRequest names its route), a child of ctx.
// fromProxy says whether the request came from a trusted proxy
// (clientip.Trust.FromProxy): only then is its W3C traceparent (and
// tracestate) continued (W3C Trace Context, section 3); from any other
// peer they are ignored and the span starts a trace of its own, so that a
// caller can neither choose a trace id nor force sampling. The probes
// (GET /healthz, /readyz) get no span, and a nil one is returned: the
// health checks of Docker, Kubernetes and the edge would otherwise make
// most of the traces.
func (t *Tracing) StartRequest(ctx context.Context, h http.Header, method, path, requestID string, fromProxy bool) (context.Context, trace.Span) {
	if path == "/healthz" || path == "/readyz" {
		return ctx, nil
	}
	if fromProxy {
		ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(h))
	}
	m := knownMethod(method)
	return t.tracer.Start(ctx, spanName(m, ""), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(AttrMethod.String(m), AttrRequestID.String(requestID)))
}

// EndRequest names the server span after its route ("POST
// /api/v1/oauth/token/"; the method alone when none matched), records the
// status (an error for 5xx: OpenTelemetry's HTTP semantic conventions
// leave 4xx unset on server spans) and ends it.
func EndRequest(span trace.Span, method, route string, status int) {
	m := knownMethod(method)
	span.SetName(spanName(m, route))
	if route != "" {
		span.SetAttributes(AttrRoute.String(route))
	}
	span.SetAttributes(AttrStatus.Int(status))
	if status >= 500 {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// TraceID is the trace id of span when it is sampled (the access record's
// trace_id: a sampled trace is one the backend keeps), else "".
func TraceID(span trace.Span) string {
	sc := span.SpanContext()
	if !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// Start starts a child span of ctx's span, when that span records (the
// request was sampled): the servers' own steps (the signature, a
// jwks_uri fetch). Otherwise it returns ctx as it is and a span that does
// nothing, at the cost of one context lookup and no allocation (tracing
// off: BenchmarkTokenEndpoint's allocs/op). Attributes are for the caller
// to set, on the span it gets, and only while span.IsRecording().
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, noop.Span{}
	}
	return parent.TracerProvider().Tracer(ScopeName).Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
}

// spanName is "METHOD route", or METHOD alone without a route.
func spanName(method, route string) string {
	if route == "" {
		return method
	}
	return method + " " + route
}

// knownMethod is method when it is one of RFC 9110's, else "_OTHER" (the
// semantic conventions' name), so that a caller's made-up method does not
// become a span name.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// Recording reports whether ctx's span records: the request is traced.
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }
