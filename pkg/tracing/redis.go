package tracing

import (
	"context"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// InstrumentRedis adds go-redis's own OpenTelemetry hook (redisotel) to
// rdb (on a Cluster, to every node's client as it appears): a client span
// per command or pipeline, the child of the request's span, named after
// the command ("evalsha"). It records no command's arguments
// (WithDBStatement off: the scripts are given secrets' digests, client ids
// and proofs' jti) and no caller; and it starts spans only inside a
// recording span, so that the watchers' and health checks' commands do not
// each start a trace of their own. Nil Tracing adds nothing.
func (t *Tracing) InstrumentRedis(rdb redis.UniversalClient) error {
	if t == nil {
		return nil
	}
	return redisotel.InstrumentTracing(rdb, t.redisOptions()...)
}

func (t *Tracing) redisOptions() []redisotel.TracingOption {
	return []redisotel.TracingOption{
		redisotel.WithTracerProvider(childOnly{tp: t.provider}),
		redisotel.WithDBStatement(false),
		redisotel.WithCallerEnabled(false),
	}
}

// childOnly is a tracer provider whose tracers start a span only as the
// child of a recording one: what redisotel is given, since it starts a
// span for every command whatever its context holds.
type childOnly struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (c childOnly) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return childTracer{t: c.tp.Tracer(name, opts...)}
}

type childTracer struct {
	embedded.Tracer
	t trace.Tracer
}

func (c childTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noop.Span{}
	}
	return c.t.Start(ctx, name, opts...)
}
