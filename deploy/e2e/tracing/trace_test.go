//go:build unix

package tracing

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// TestTraces: through the edge with tracing on, a token request and a /me
// call each make one trace in Jaeger (read back through its query API):
// the edge's span at the root, the server's span (named after its route)
// its child, and the Redis script's span and the signature's (or its
// check's) children of the server's. No span, tag, log or process tag
// holds the secret, the token, the Authorization header or the client id.
// A traceparent is continued only from a trusted proxy.
func TestTraces(t *testing.T) {
	s := startStack(t)
	id, secret := s.client(t, "traced client")
	basic := e2etest.Basic(id, secret)
	form := e2etest.Form("grant_type", "client_credentials", "scope", scope)

	tok := do(t, s.hc, http.MethodPost, s.edge+"/api/v1/oauth/token/", form, basic)
	if tok.status != http.StatusOK {
		t.Fatalf("token through the edge: %d %s", tok.status, tok.body)
	}
	var issued struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(tok.body, &issued); err != nil || issued.AccessToken == "" {
		t.Fatalf("token answer %s: %v", tok.body, err)
	}
	// Never in a trace: what identifies or authenticates the client.
	forbidden := []string{secret, url.QueryEscape(secret), issued.AccessToken, id,
		base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":" + url.QueryEscape(secret))), "svc_cs_", "svc_at_"}

	t.Run("token", func(t *testing.T) {
		tid := traceID(t, s.authP, tok.header.Get("X-Request-Id"))
		if tid == "" {
			t.Fatalf("the token request's access record has no trace_id")
		}
		tr := s.waitTrace(t, tid, "authserver", "POST /api/v1/oauth/token/", "token.sign")
		srv := tr.checkTree(t, "authserver", "POST /api/v1/oauth/token/")
		tr.checkChild(t, srv, "token.sign")
		tr.checkTag(t, srv, "http.route", "/api/v1/oauth/token/")
		tr.checkTag(t, srv, "http.response.status_code", float64(200))
		tr.checkNone(t, forbidden)
	})

	t.Run("me", func(t *testing.T) {
		me := do(t, s.hc, http.MethodGet, s.edge+"/api/v1/me/", "", e2etest.Bearer(issued.AccessToken))
		if me.status != http.StatusOK {
			t.Fatalf("/me through the edge: %d %s", me.status, me.body)
		}
		tid := traceID(t, s.resP, me.header.Get("X-Request-Id"))
		if tid == "" {
			t.Fatalf("the /me request's access record has no trace_id")
		}
		tr := s.waitTrace(t, tid, "resourceserver", "GET /api/v1/me/", "token.verify")
		srv := tr.checkTree(t, "resourceserver", "GET /api/v1/me/")
		tr.checkChild(t, srv, "token.verify")
		tr.checkTag(t, srv, "http.route", "/api/v1/me/")
		tr.checkNone(t, forbidden)
	})

	// A made-up trace context: continued from a trusted proxy (the test's
	// 127.0.0.1 is one), ignored from any other peer and dropped by the
	// edge, which starts its own trace.
	const madeUp = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparent := e2etest.Header("traceparent", "00-"+madeUp+"-00f067aa0ba902b7-01")
	for _, c := range []struct {
		name   string
		client *http.Client
		url    string
		kept   bool
	}{
		{"from a trusted proxy", s.hc, s.auth, true},
		{"from a partner", s.partner, s.auth, false},
		{"through the edge", s.partner, s.edge, false},
	} {
		t.Run("traceparent "+c.name, func(t *testing.T) {
			a := do(t, c.client, http.MethodGet, c.url+"/.well-known/jwks.json", "", traceparent)
			if a.status != http.StatusOK {
				t.Fatalf("jwks: %d %s", a.status, a.body)
			}
			tid := traceID(t, s.authP, a.header.Get("X-Request-Id"))
			if tid == "" || (tid == madeUp) != c.kept {
				t.Fatalf("trace_id %q of a request with the traceparent of trace %s: want it kept %v", tid, madeUp, c.kept)
			}
		})
	}
}

// jaegerTrace is a trace as Jaeger's query API answers it.
type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
	raw       string
}

type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags      []jaegerTag `json:"tags"`
	ProcessID string      `json:"processID"`
}

type jaegerTag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

type jaegerProcess struct {
	ServiceName string      `json:"serviceName"`
	Tags        []jaegerTag `json:"tags"`
}

// waitTrace reads trace id from Jaeger until it holds the edge's span and
// service's spans named ops with a Redis span among them (each exporter
// sends its own spans, so they arrive at different times).
func (s *stack) waitTrace(t *testing.T, id, service string, ops ...string) *jaegerTrace {
	t.Helper()
	var tr *jaegerTrace
	testwait.Eventually(t, traceWait, "trace "+id+" whole in Jaeger", func() bool {
		resp, err := s.hc.Get(s.query + "/api/traces/" + id)
		if err != nil {
			return false
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Data []jaegerTrace `json:"data"`
		}
		if err != nil || resp.StatusCode != http.StatusOK || json.Unmarshal(body, &got) != nil || len(got.Data) != 1 {
			return false
		}
		tr = &got.Data[0]
		tr.raw = string(body) // all of it, names, tags, logs and processes
		if len(tr.spans("edge", "")) == 0 || len(tr.redis(service)) == 0 {
			return false
		}
		for _, op := range ops {
			if len(tr.spans(service, op)) == 0 {
				return false
			}
		}
		return true
	})
	return tr
}

// spans are the spans of service named op ("": any name).
func (tr *jaegerTrace) spans(service, op string) []jaegerSpan {
	var out []jaegerSpan
	for _, sp := range tr.Spans {
		if tr.Processes[sp.ProcessID].ServiceName == service && (op == "" || sp.OperationName == op) {
			out = append(out, sp)
		}
	}
	return out
}

// redis are service's Redis spans: go-redis's hook names them after the
// command, and the servers' scripts run as EVALSHA (EVAL after NOSCRIPT).
func (tr *jaegerTrace) redis(service string) []jaegerSpan {
	var out []jaegerSpan
	for _, sp := range tr.spans(service, "") {
		if sp.OperationName == "evalsha" || sp.OperationName == "eval" {
			out = append(out, sp)
		}
	}
	return out
}

func parent(sp jaegerSpan) string {
	for _, r := range sp.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// checkTree checks the trace's shape: one root, the edge's; the server's
// span op of service its child; every Redis span of service a child of
// that span. It returns the server's span.
func (tr *jaegerTrace) checkTree(t *testing.T, service, op string) jaegerSpan {
	t.Helper()
	var roots []string
	for _, sp := range tr.Spans {
		if parent(sp) == "" {
			roots = append(roots, tr.Processes[sp.ProcessID].ServiceName+" "+sp.OperationName)
		}
	}
	edge := tr.spans("edge", "")
	if len(roots) != 1 || len(edge) != 1 || parent(edge[0]) != "" {
		t.Fatalf("trace %s: roots %v, edge spans %d: want the edge's span alone at the root\n%s", tr.TraceID, roots, len(edge), tr.raw)
	}
	srv := tr.spans(service, op)
	if len(srv) != 1 || parent(srv[0]) != edge[0].SpanID {
		t.Fatalf("trace %s: want one %s span %q, the edge's child\n%s", tr.TraceID, service, op, tr.raw)
	}
	for _, r := range tr.redis(service) {
		if parent(r) != srv[0].SpanID {
			t.Errorf("trace %s: Redis span %s %q is not a child of %q", tr.TraceID, r.SpanID, r.OperationName, op)
		}
	}
	return srv[0]
}

// checkChild checks that span op is a child of srv.
func (tr *jaegerTrace) checkChild(t *testing.T, srv jaegerSpan, op string) {
	t.Helper()
	for _, sp := range tr.Spans {
		if sp.OperationName == op && parent(sp) == srv.SpanID {
			return
		}
	}
	t.Errorf("trace %s: no span %q under %q\n%s", tr.TraceID, op, srv.OperationName, tr.raw)
}

// checkTag checks that sp has tag key with value want.
func (tr *jaegerTrace) checkTag(t *testing.T, sp jaegerSpan, key string, want any) {
	t.Helper()
	for _, tag := range sp.Tags {
		if tag.Key == key {
			if tag.Value != want {
				t.Errorf("span %q: tag %s = %v, want %v", sp.OperationName, key, tag.Value, want)
			}
			return
		}
	}
	t.Errorf("span %q: no tag %s (tags %v)", sp.OperationName, key, sp.Tags)
}

// checkNone checks that nothing of the trace (names, tags, logs,
// processes) holds any of forbidden.
func (tr *jaegerTrace) checkNone(t *testing.T, forbidden []string) {
	t.Helper()
	for _, f := range forbidden {
		if f != "" && strings.Contains(tr.raw, f) {
			t.Errorf("trace %s holds %q:\n%s", tr.TraceID, f, tr.raw)
		}
	}
}
