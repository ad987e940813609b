package httpserver_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/metrics"
	"github.com/partnerapi/authplatform/pkg/testwait"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

var requestIDRE = regexp.MustCompile(`^[0-9a-f]{32}$`)

// baseServer serves h behind Base on a real loopback server.
func baseServer(t *testing.T, trust string, h http.HandlerFunc) (*httptest.Server, *logtest.Sink) {
	t.Helper()
	sink := &logtest.Sink{}
	logger, err := logging.New(sink, "info")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := clientip.ParseTrust(trust)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpserver.Base{Logger: logger, Trust: tr, MaxBodyBytes: 16}.Wrap(h))
	t.Cleanup(srv.Close)
	return srv, sink
}

func get(t *testing.T, url string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// The request id: a new one unless a trusted proxy sent a sane one; echoed,
// in the handler's context and on the access record, which never holds the
// query string.
func TestBaseRequestID(t *testing.T) {
	ok := func(w http.ResponseWriter, r *http.Request) {
		httpserver.Annotate(r.Context(), slog.String("client_id", "svc_x"))
		io.WriteString(w, logging.RequestID(r.Context()))
	}
	untrusted, logs := baseServer(t, "", ok)
	trusted, _ := baseServer(t, "127.0.0.1", ok)
	for _, tt := range []struct {
		name, url, sent string
		kept            bool
	}{
		{"none sent", untrusted.URL, "", false},
		{"untrusted peer", untrusted.URL, "req-from-anyone", false},
		{"trusted proxy", trusted.URL, "req-from-the-edge", true},
		{"trusted proxy, unsafe id", trusted.URL, "a\"b", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := get(t, tt.url+"/p?token=secret", map[string]string{"X-Request-Id": tt.sent})
			id := res.Header.Get("X-Request-Id")
			body, _ := io.ReadAll(res.Body)
			if string(body) != id {
				t.Errorf("context id %q, header %q", body, id)
			}
			if tt.kept && id != tt.sent || !tt.kept && !requestIDRE.MatchString(id) {
				t.Errorf("id %q for %q sent", id, tt.sent)
			}
		})
	}
	recs := logs.Records(t)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2: %v", len(recs), recs)
	}
	r := recs[0]
	for k, want := range map[string]any{"msg": "request", "method": "GET", "path": "/p", "status": 200.0, "client_ip": "127.0.0.1", "client_id": "svc_x"} {
		if r[k] != want {
			t.Errorf("access record %s = %v, want %v", k, r[k], want)
		}
	}
	if !requestIDRE.MatchString(r["request_id"].(string)) || r["duration"] == nil {
		t.Errorf("access record %v", r)
	}
	if strings.Contains(logs.String(), "secret") {
		t.Error("the query string was logged")
	}
}

// A panic answers 500 {"detail":"internal error"} without internals, logs
// the panic and its stack, and the connection serves the next request.
func TestBasePanic(t *testing.T) {
	srv, logs := baseServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("redis://:hunter2@10.0.0.5:6379 exploded")
		}
		io.WriteString(w, "fine")
	})
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	io.WriteString(conn, "GET /panic HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 500 || string(body) != `{"detail":"internal error"}` ||
		res.Header.Get("Content-Type") != "application/json; charset=utf-8" || res.Header.Get("Cache-Control") != "no-store" ||
		!requestIDRE.MatchString(res.Header.Get("X-Request-Id")) {
		t.Errorf("panic answered %d %v %s", res.StatusCode, res.Header, body)
	}
	res, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the connection did not carry on: %v", err)
	}
	if body, _ := io.ReadAll(res.Body); res.StatusCode != 200 || string(body) != "fine" {
		t.Errorf("next request: %d %s", res.StatusCode, body)
	}
	var panics, status500 int
	for _, r := range logs.Records(t) {
		if r["msg"] == "panic" && strings.Contains(r["stack"].(string), "goroutine") && r["request_id"] != nil {
			panics++
		}
		if r["msg"] == "request" && r["status"] == 500.0 {
			status500++
		}
	}
	if panics != 1 || status500 != 1 {
		t.Errorf("%d panic records, %d access records of 500; want 1 and 1", panics, status500)
	}
}

// The base layer tells its Observer of every answer, with the access record
// off too: the route the router set (none for a 404), the method, and the
// status a recovered panic was answered with.
func TestBaseMetrics(t *testing.T) {
	logger, err := logging.New(io.Discard, "warn") // no access record
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New("test")
	srv := httptest.NewServer(httpserver.Base{Logger: logger, Observer: m}.Wrap(httpserver.NewRouter([]httpserver.Route{
		{Pattern: "GET /ok", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fine") })},
		{Pattern: "POST /items/{id}", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { panic("boom") })},
	}, httpserver.DetailMisrouted)))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/ok", 200}, {"GET", "/ok", 200}, {"GET", "/nope", 404}, {"POST", "/items/7", 500}, {"BREW", "/ok", 405},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.status {
			t.Fatalf("%s %s: %d, want %d", tc.method, tc.path, res.StatusCode, tc.status)
		}
	}
	wantRequests(t, m, `
partnerapi_http_requests_total{code="2xx",method="GET",route="/ok"} 2
partnerapi_http_requests_total{code="4xx",method="GET",route="unmatched"} 1
partnerapi_http_requests_total{code="4xx",method="OTHER",route="/ok"} 1
partnerapi_http_requests_total{code="5xx",method="POST",route="/items/{id}"} 1
`)
	if n := testutil.CollectAndCount(m.Registry, "partnerapi_http_request_duration_seconds"); n != 3 {
		t.Errorf("%d duration series, want 3 (one per route label)", n)
	}
}

// wantRequests compares m's partnerapi_http_requests_total with series (its
// samples in the text exposition format, HELP and TYPE left out).
func wantRequests(t *testing.T, m *metrics.Metrics, series string) {
	t.Helper()
	want := "# HELP partnerapi_http_requests_total HTTP requests answered, by route pattern, method and status class.\n" +
		"# TYPE partnerapi_http_requests_total counter" + series
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "partnerapi_http_requests_total"); err != nil {
		t.Error(err)
	}
}

// http.ErrAbortHandler aborts the answer: no 500, the connection is cut.
func TestBaseAbort(t *testing.T) {
	srv, _ := baseServer(t, "", func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
	if res, err := http.Get(srv.URL); err == nil {
		res.Body.Close()
		t.Fatalf("aborted handler answered %d", res.StatusCode)
	}
}

// A body over the limit fails to read with *http.MaxBytesError, and the
// connection is closed after the answer.
func TestBaseBodyLimit(t *testing.T) {
	srv, _ := baseServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		case err != nil:
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	for _, tt := range []struct {
		body   string
		status int
		closed bool
	}{
		{strings.Repeat("x", 16), 200, false},
		{strings.Repeat("x", 17), 413, true},
	} {
		res, err := http.Post(srv.URL, "text/plain", strings.NewReader(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tt.status || res.Close != tt.closed {
			t.Errorf("%d bytes: %d, close %v; want %d, %v", len(tt.body), res.StatusCode, res.Close, tt.status, tt.closed)
		}
	}
}

// BenchmarkBase is the base layer's own cost per request, in process: the
// request id, the contexts and the access record (JSON, with a handler's
// annotation, written to io.Discard), around a handler that writes a
// status.
func BenchmarkBase(b *testing.B) {
	logger, err := logging.New(io.Discard, "info")
	if err != nil {
		b.Fatal(err)
	}
	h := httpserver.Base{Logger: logger}.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpserver.Annotate(r.Context(), slog.String("client_id", "svc_3f9a1c2b7d4e5f60"))
		w.WriteHeader(http.StatusNoContent)
	}))
	req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkLayers is what every answer of ours goes through before and
// after its handler, in process, stacked as the servers stack them: the
// base layer with the metrics, the router, around a handler that annotates
// the access record and writes a small JSON body.
func BenchmarkLayers(b *testing.B) {
	logger, err := logging.New(io.Discard, "info")
	if err != nil {
		b.Fatal(err)
	}
	h := httpserver.Base{Logger: logger, Observer: metrics.New("bench")}.Wrap(httpserver.NewRouter([]httpserver.Route{
		{Pattern: "POST /api/v1/oauth/introspect/", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			httpserver.Annotate(r.Context(), slog.String("client_id", "svc_3f9a1c2b7d4e5f60"))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"active":false}`)
		})},
	}, httpserver.DetailMisrouted))
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/oauth/introspect/", strings.NewReader("token=x"))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// TestBaseTracing: with Tracing, a request runs in a server span named
// after the route the router set, its context carries the span, and its
// access record carries the trace id; a trusted proxy's traceparent is
// continued. Without Tracing no record has a trace_id (TestBaseRequestID's
// servers).
func TestBaseTracing(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	sink := &logtest.Sink{}
	logger, err := logging.New(sink, "info")
	if err != nil {
		t.Fatal(err)
	}
	trust, _ := clientip.ParseTrust("127.0.0.1")
	h := httpserver.NewRouter([]httpserver.Route{{Pattern: "GET /items/{id}", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !tracing.Recording(r.Context()) {
			t.Error("the handler's context has no recording span")
		}
		io.WriteString(w, "ok")
	})}}, httpserver.DetailMisrouted)
	srv := httptest.NewServer(httpserver.Base{Logger: logger, Trust: trust, Tracing: tracing.New(tp)}.Wrap(h))
	t.Cleanup(srv.Close)

	const parent = "4bf92f3577b34da6a3ce929d0e0e4736"
	res := get(t, srv.URL+"/items/42?token=secret", map[string]string{"traceparent": "00-" + parent + "-00f067aa0ba902b7-01"})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	id := res.Header.Get("X-Request-Id")
	var spans []sdktrace.ReadOnlySpan
	testwait.Eventually(t, 5*time.Second, "the server span ended", func() bool {
		spans = rec.Ended()
		return len(spans) == 1
	})
	if s := spans[0]; s.Name() != "GET /items/{id}" || s.SpanContext().TraceID().String() != parent {
		t.Errorf("span %q of trace %s, want %q of %s", s.Name(), s.SpanContext().TraceID(), "GET /items/{id}", parent)
	}
	for _, a := range spans[0].Attributes() {
		if a.Key == "partnerapi.request_id" {
			// A random hex id, which may hold "42" by chance.
			if a.Value.AsString() != id {
				t.Errorf("attribute %s = %q, want the request id %q", a.Key, a.Value.AsString(), id)
			}
			continue
		}
		if strings.Contains(a.Value.String(), "secret") || strings.Contains(a.Value.String(), "42") {
			t.Errorf("attribute %s = %q holds the raw path or query", a.Key, a.Value.String())
		}
	}
	testwait.Eventually(t, 5*time.Second, "the access record", func() bool {
		return strings.Contains(sink.String(), `"trace_id":"`+parent+`"`) && strings.Contains(sink.String(), id)
	})
}

// TestAnnotateOnce: a handler that annotates the same key twice (a console
// page making two admin API calls in process, each naming its operator)
// leaves one such attribute on the access record, the last one given,
// next to the others.
func TestAnnotateOnce(t *testing.T) {
	srv, logs := baseServer(t, "", func(w http.ResponseWriter, r *http.Request) {
		httpserver.Annotate(r.Context(), slog.String("client_id", "svc_first"))
		httpserver.Annotate(r.Context(), slog.String("client_id", "svc_second"), slog.String("grant", "client_credentials"))
		httpserver.Annotate(r.Context(), slog.String("client_id", "svc_second"))
	})
	get(t, srv.URL+"/twice", nil)
	recs := logs.Records(t)
	if len(recs) != 1 || recs[0]["client_id"] != "svc_second" || recs[0]["grant"] != "client_credentials" {
		t.Fatalf("access records: %v", recs)
	}
	if n := strings.Count(logs.String(), `"client_id"`); n != 1 {
		t.Fatalf("client_id %d times in the access record, want once:\n%s", n, logs.String())
	}
}
