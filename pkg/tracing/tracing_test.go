package tracing

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// recorded is tracing through an SDK provider that keeps every ended span
// in memory (the SDK's own SpanRecorder; deploy/e2e/tracing checks the
// spans in a real Jaeger).
func recorded(t *testing.T, sampler sdktrace.Sampler) (*Tracing, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sampler))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return New(tp), rec
}

const (
	remoteTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	remoteSpan  = "00f067aa0ba902b7"
)

func traceparent() http.Header {
	return http.Header{"Traceparent": {"00-" + remoteTrace + "-" + remoteSpan + "-01"}}
}

// TestStartRequest: the traceparent of a trusted proxy is continued, any
// other peer's ignored; the span is named after its route, with the
// method, route, status and request id, and an error only for 5xx.
func TestStartRequest(t *testing.T) {
	for _, c := range []struct {
		name      string
		fromProxy bool
		method    string
		route     string
		status    int
		wantName  string
		wantError bool
	}{
		{"trusted proxy", true, http.MethodPost, "/api/v1/oauth/token/", 200, "POST /api/v1/oauth/token/", false},
		{"any other peer", false, http.MethodGet, "/api/v1/me/", 401, "GET /api/v1/me/", false},
		{"no route", false, http.MethodGet, "", 404, "GET", false},
		{"a made-up method", true, "BREW", "", 405, "_OTHER", false},
		{"a server error", true, http.MethodGet, "/items/{id}", 503, "GET /items/{id}", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, rec := recorded(t, sdktrace.ParentBased(sdktrace.AlwaysSample()))
			ctx, span := tr.StartRequest(context.Background(), traceparent(), c.method, "/p", "req-1", c.fromProxy)
			if !Recording(ctx) || trace.SpanFromContext(ctx) != span {
				t.Fatal("the request's context does not carry its recording span")
			}
			EndRequest(span, c.method, c.route, c.status)
			ended := rec.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans ended", len(ended))
			}
			s := ended[0]
			if s.Name() != c.wantName || s.SpanKind() != trace.SpanKindServer {
				t.Errorf("span %q kind %v, want %q server", s.Name(), s.SpanKind(), c.wantName)
			}
			continued := s.SpanContext().TraceID().String() == remoteTrace && s.Parent().SpanID().String() == remoteSpan
			if continued != c.fromProxy {
				t.Errorf("trace %s parent %s: continued %v, want %v", s.SpanContext().TraceID(), s.Parent().SpanID(), continued, c.fromProxy)
			}
			if got := TraceID(span); got != s.SpanContext().TraceID().String() {
				t.Errorf("TraceID %q of a sampled span", got)
			}
			want := map[attribute.Key]attribute.Value{AttrMethod: attribute.StringValue(knownMethod(c.method)),
				AttrRequestID: attribute.StringValue("req-1"), AttrStatus: attribute.IntValue(c.status)}
			if c.route != "" {
				want[AttrRoute] = attribute.StringValue(c.route)
			}
			got := map[attribute.Key]attribute.Value{}
			for _, a := range s.Attributes() {
				got[a.Key] = a.Value
			}
			if len(got) != len(want) {
				t.Errorf("attributes %v, want %v", got, want)
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("attribute %s = %v, want %v", k, got[k].String(), v.String())
				}
			}
			if (s.Status().Code == codes.Error) != c.wantError {
				t.Errorf("status %v, want an error %v", s.Status(), c.wantError)
			}
		})
	}
}

// TestStartChild: Start makes a child of a recording span only; otherwise
// it returns the context as it is, without allocating.
func TestStartChild(t *testing.T) {
	tr, rec := recorded(t, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0)))
	// Unsampled (ratio 0, no parent): no child, no trace id.
	ctx, span := tr.StartRequest(context.Background(), nil, http.MethodGet, "/x", "req-1", false)
	if cctx, child := Start(ctx, SpanSign); cctx != ctx || child.IsRecording() {
		t.Error("Start under an unsampled span made a span")
	}
	if TraceID(span) != "" {
		t.Errorf("TraceID %q of an unsampled span", TraceID(span))
	}
	EndRequest(span, http.MethodGet, "/x", 200)

	bg := context.Background()
	if allocs := testing.AllocsPerRun(100, func() {
		_, s := Start(bg, SpanVerify)
		s.End()
	}); allocs != 0 {
		t.Errorf("Start without a span: %v allocations", allocs)
	}

	// Sampled: a child of the trusted proxy's trace.
	if pctx, probe := tr.StartRequest(bg, traceparent(), http.MethodGet, "/readyz", "req-2", true); probe != nil || pctx != bg {
		t.Error("a probe got a span")
	}
	ctx, span = tr.StartRequest(bg, traceparent(), http.MethodPost, "/api/v1/oauth/token/", "req-3", true)
	_, child := Start(ctx, SpanSign)
	child.End()
	EndRequest(span, http.MethodPost, "/api/v1/oauth/token/", 200)
	var names []string
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		if s.Name() == SpanSign && s.Parent().SpanID() != span.SpanContext().SpanID() {
			t.Errorf("%s's parent %s, want the request's %s", SpanSign, s.Parent().SpanID(), span.SpanContext().SpanID())
		}
	}
	if len(names) != 2 || names[0] != SpanSign {
		t.Errorf("ended %v, want [%s POST /api/v1/oauth/token/]", names, SpanSign)
	}
}

// TestNilTracing: tracing off is a nil *Tracing, whose Close and
// InstrumentRedis do nothing and fail nothing.
func TestNilTracing(t *testing.T) {
	var tr *Tracing
	if err := tr.Close(); err != nil {
		t.Errorf("Close of nil: %v", err)
	}
	if err := tr.InstrumentRedis(nil); err != nil {
		t.Errorf("InstrumentRedis of nil: %v", err)
	}
}
