package tokenserver

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

// benchPost sends one POST and drains the answer, failing on any status
// but 200.
func benchPost(b *testing.B, c *http.Client, target, body, id, secret string) {
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", formType)
	basic(id, secret)(req)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkTokenEndpoint: one token request end to end over httptest
// (parse, digest check, admission and rate log in Redis, EdDSA signature),
// tracing off (Deps.Tracing nil), as a server runs without an OTLP
// endpoint: its allocs/op are those before package tracing existed.
func BenchmarkTokenEndpoint(b *testing.B) {
	benchTokenEndpoint(b, newEnv(b, withRedisClock()))
}

// BenchmarkTokenEndpointTraced: BenchmarkTokenEndpoint with tracing on
// (server span, Redis span through redisotel, signature span), each
// request a trace of its own, sampled by OTEL_TRACES_SAMPLER's
// parentbased_traceidratio at 1% and at 100%; the SDK's batch span
// processor hands the sampled spans to an exporter that discards them, so
// what is measured is the SDK's cost in the server, not OTLP's encoding
// and sending (deploy/docs/tracing.md, "Cost").
func BenchmarkTokenEndpointTraced(b *testing.B) {
	for _, ratio := range []float64{0.01, 1} {
		b.Run("sampled="+strconv.FormatFloat(ratio*100, 'f', -1, 64)+"%", func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()),
				sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			benchTokenEndpoint(b, newEnv(b, withRedisClock(), withTracing(tracing.New(tp))))
		})
	}
}

func benchTokenEndpoint(b *testing.B, e *env) {
	id, secret := e.client(clients.AudienceHospital, clients.AllScopes...)
	if _, err := e.store.SetTokenRateLimit(context.Background(), id, clients.MaxRateLimitPerMinute); err != nil {
		b.Fatal(err)
	}
	c := &http.Client{}
	body := grant()
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, c, e.url+PathToken, body, id, secret)
	}
}

// BenchmarkIntrospect: one introspection of a live token end to end.
func BenchmarkIntrospect(b *testing.B) {
	e := newEnv(b, withRedisClock())
	id, secret := e.client(clients.AudienceHospital, clients.AllScopes...)
	body := form("token", e.token(b, e.url, id, secret, ""))
	c := &http.Client{}
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, c, e.url+PathIntrospect, body, id, secret)
	}
}

// BenchmarkIssue: go-oauth2's part of one token, after authentication
// (issue: the Manager bound to the request's read, the token signed, the
// answer's fields), without HTTP or Redis.
func BenchmarkIssue(b *testing.B) {
	e := newEnv(b)
	id, _ := e.client(clients.AudienceHospital, clients.AllScopes...)
	req := &clientRequest{Client: credentials{ID: id}}
	auth := clients.Authentication{Outcome: clients.Authenticated, Known: true, Generation: 1, SecretID: 1, Scopes: clients.AllScopes}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.srv.issue(ctx, req, auth); err != nil {
			b.Fatal(err)
		}
	}
}
