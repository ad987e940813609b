//go:build unix

package tracing

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// The suite's ports (18300-18399): Jaeger's, the edge's and the servers'.
const (
	queryPort     = 18300 // Jaeger's query API (and UI)
	otlpHTTPPort  = 18301 // OTLP/HTTP: the servers export here
	otlpGRPCPort  = 18302 // OTLP/gRPC: the edge (Caddy) exports here
	queryGRPCPort = 18303 // Jaeger's query gRPC API, unused but bound
	edgePort      = 18310
	authPort      = 18311
	resourcePort  = 18312
)

const (
	audience = "partner-api"
	org      = "tracing-test"
	scope    = "patients.read"
	loopback = "127.0.0.1"
	// traceWait bounds the wait for a trace to reach Jaeger whole: every
	// exporter sends at most 100 ms after a span ends (OTEL_BSP_SCHEDULE_DELAY).
	traceWait = 30 * time.Second
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// stack is Jaeger, the edge with tracing on, and one token service and
// one resource server exporting to Jaeger, all processes on loopback.
type stack struct {
	*e2etest.Servers
	edge    string // the edge's base URL: the partners' one
	auth    string // the token service's own base URL
	query   string // Jaeger's query API
	authP   *e2etest.Process
	resP    *e2etest.Process
	hc      *http.Client // from 127.0.0.1: the edge's address, a trusted proxy
	partner *http.Client // from 127.0.0.2: no proxy
}

// startStack starts the whole stack, or skips the test: under -short,
// without a Redis, or without the Jaeger or Caddy binary (outside CI;
// under CI=true each of these fails the test instead).
func startStack(t *testing.T) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test builds the servers and starts Jaeger, the edge and both servers")
	}
	jaeger := e2etest.ToolBinary(t, "deploy/e2e/tracing/tool", "github.com/jaegertracing/jaeger", "jaeger", "deploy/e2e/tracing/build-jaeger.sh")
	caddy := e2etest.Caddy(t) // with its tracing module, which Debian's lacks
	s := &stack{
		Servers: e2etest.PrepareServers(t, "TRUSTED_PROXIES="+loopback+"/32", "METRICS_ADDR=off"),
		edge:    "http://" + loopback + ":" + strconv.Itoa(edgePort),
		auth:    "http://" + loopback + ":" + strconv.Itoa(authPort),
		query:   "http://" + loopback + ":" + strconv.Itoa(queryPort),
		hc:      &http.Client{Timeout: 10 * time.Second},
		partner: clientFrom(net.IPv4(127, 0, 0, 2)),
	}
	s.startJaeger(t, jaeger)

	keys := filepath.Join(s.Dir, "signing.json")
	s.CLI(t, "keys", "generate", "--out", keys)
	s.CLI(t, "orgs", "create", "--slug", org, "--name", "Tracing test", "--environment", "sandbox")

	// Both servers export every span (the default sampler follows the
	// edge's decision, and the edge samples every trace) over OTLP/HTTP.
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + loopback + ":" + strconv.Itoa(otlpHTTPPort), "OTEL_BSP_SCHEDULE_DELAY=100"}
	resource := "http://" + loopback + ":" + strconv.Itoa(resourcePort)
	s.authP = e2etest.StartProcess(t, "authserver", append(s.Env, otel...), filepath.Join(s.Bin, "authserver"), "serve",
		"--addr", strings.TrimPrefix(s.auth, "http://"), "--admin-addr", "off", "--keys", keys, "--issuer", s.edge, "--audience", audience)
	e2etest.WaitOK(t, s.auth+"/readyz", s.authP)
	s.resP = e2etest.StartProcess(t, "resourceserver", append(s.Env, otel...), filepath.Join(s.Bin, "resourceserver"), "serve",
		"--addr", strings.TrimPrefix(resource, "http://"), "--jwks-url", s.auth+"/.well-known/jwks.json", "--issuer", s.edge, "--audience", audience, "--base-url", s.edge)
	e2etest.WaitOK(t, resource+"/readyz", s.resP, s.authP)

	// The edge exports over OTLP/gRPC, the protocol every Caddy release
	// speaks.
	edge := e2etest.StartEdge(t, e2etest.Edge{Bin: caddy, Home: s.Dir, Port: edgePort,
		Auth: []string{strings.TrimPrefix(s.auth, "http://")}, Resource: []string{strings.TrimPrefix(resource, "http://")},
		Env: []string{"EDGE_TRACING=on", "OTEL_SERVICE_NAME=edge", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_INSECURE=true",
			"OTEL_EXPORTER_OTLP_ENDPOINT=http://" + loopback + ":" + strconv.Itoa(otlpGRPCPort), "OTEL_BSP_SCHEDULE_DELAY=100"}})
	e2etest.WaitOK(t, s.edge+"/.well-known/jwks.json", edge, s.authP)
	e2etest.WaitOK(t, s.edge+"/readyz", edge, s.resP)
	return s
}

// jaegerConfig is Jaeger v2's all-in-one reduced to what the suite reads:
// OTLP in (both protocols), traces kept in memory, the query API; every
// listener on the suite's ports, and no telemetry listener of its own.
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
      grpc:
        endpoint: 127.0.0.1:%d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`

func (s *stack) startJaeger(t *testing.T, bin string) {
	t.Helper()
	cfg := filepath.Join(s.Dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, jaegerConfig, queryPort, queryGRPCPort, otlpHTTPPort, otlpGRPCPort), 0o600); err != nil {
		t.Fatal(err)
	}
	p := e2etest.StartProcess(t, "jaeger", e2etest.BaseEnv(s.Dir), bin, "--config", cfg)
	e2etest.WaitOK(t, s.query+"/api/services", p)
}

// client creates a client_secret client and returns its id and secret.
func (s *stack) client(t *testing.T, name string) (string, string) {
	t.Helper()
	var c struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	out := s.CLI(t, "clients", "create", "--org", org, "--name", name, "--audience", "hospital", "--scopes", scope, "--json")
	if err := json.Unmarshal(out, &c); err != nil || c.ID == "" || c.Secret == "" {
		t.Fatalf("clients create --json: %q (%v)", out, err)
	}
	return c.ID, c.Secret
}

// clientFrom is an HTTP client whose connections come from addr.
func clientFrom(addr net.IP) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: addr}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

// answer is an HTTP answer, its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, c *http.Client, method, url, body string, opts ...func(*http.Request)) answer {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// traceID is the trace_id of the access record p wrote for the request
// with the given id, once it has written it ("" if the record has none).
func traceID(t *testing.T, p *e2etest.Process, requestID string) string {
	t.Helper()
	var rec map[string]any
	testwait.Eventually(t, 10*time.Second, p.Name+"'s access record of "+requestID, func() bool {
		var ok bool
		rec, ok = p.AccessRecord(requestID)
		return ok
	})
	id, _ := rec["trace_id"].(string)
	return id
}
