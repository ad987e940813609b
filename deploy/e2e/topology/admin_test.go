//go:build unix

package topology

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/oauth2/clientcredentials"

	"github.com/partnerapi/authplatform/authserver/adminapi/adminapitest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestAdminAPI runs the operator's journey through the admin API of the
// real token service binary, on a single Redis node and on the shared
// Sentinel group and Cluster: the first operator is made with the command
// line, gets its tokens through the edge with x/oauth2's client
// credentials flow, and manages a partner whose tokens work, and die, on
// the resource server at once. Every answer is checked against the admin
// OpenAPI document.
func TestAdminAPI(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	t.Parallel()      // beside the other quick tests; the long ones run alone first
	requireCommand(t, "caddy")
	t.Run("node", func(t *testing.T) { adminJourney(t, startTopology(t, 1, 1)) })
	for _, rt := range redistest.Topologies(t) {
		t.Run(rt.Name(), func(t *testing.T) {
			adminJourney(t, startTopologyOn(t, 1, 1, rt.URL(), testPrefix(t, rt.URL())))
		})
	}
}

// adminClient calls one token service replica's admin API as an operator.
type adminClient struct {
	t    *testing.T
	base string
	hc   *http.Client
	doc  *adminapitest.Validator
}

// newOperator creates an operator with the command line (the bootstrap)
// and returns a client of the admin API with its tokens.
func (top *topology) newOperator(t *testing.T, readOnly bool) (credentials, *adminClient) {
	t.Helper()
	args := []string{"operators", "create", "--name", "e2e operator"}
	if readOnly {
		args = append(args, "--read-only")
	}
	op := top.cliCredentials(t, args...)
	cc := clientcredentials.Config{ClientID: op.ID, ClientSecret: op.Secret, TokenURL: top.edge + "/api/v1/oauth/token/"}
	doc, err := adminapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return op, &adminClient{t: t, base: top.auth[0].admin, hc: cc.Client(t.Context()), doc: doc}
}

func (c *adminClient) call(method, path string, body any, header ...string) answer {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := c.doc.Validate(context.Background(), req, resp.StatusCode, resp.Header, raw); err != nil {
		c.t.Errorf("admin answer off the OpenAPI document: %v\n%s", err, raw)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: raw}
}

func (a answer) object(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatalf("%d %s: %v", a.status, a.body, err)
	}
	return v
}

func adminJourney(t *testing.T, top *topology) {
	op, admin := top.newOperator(t, false)
	_, reader := top.newOperator(t, true)

	a := admin.call("POST", "/admin/v1/orgs", map[string]any{"slug": "admin-e2e", "name": "Admin e2e", "environment": "live"})
	if a.status != 201 {
		t.Fatalf("create org: %d %s", a.status, a.body)
	}
	if a := reader.call("POST", "/admin/v1/clients", map[string]any{"organization_slug": "admin-e2e", "name": "x", "audience": "pharma"}); a.status != 403 {
		t.Fatalf("read-only operator creates: %d %s", a.status, a.body)
	}
	key := "5b7e2c1a-9d3f-4e8b-a6c0-1f2e3d4c5b6a"
	body := map[string]any{"organization_slug": "admin-e2e", "name": "EHR", "audience": "hospital", "scopes": []string{"patients.read"}}
	created := admin.call("POST", "/admin/v1/clients", body, "Idempotency-Key", key)
	retried := admin.call("POST", "/admin/v1/clients", body, "Idempotency-Key", key)
	if created.status != 201 || retried.status != 201 || string(created.body) != string(retried.body) || retried.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("create and its retry: %d %s / %d %s", created.status, created.body, retried.status, retried.body)
	}
	c := credentials{ID: created.object(t)["client_id"].(string), Secret: created.object(t)["client_secret"].(string)}
	tok := top.token(t, c, basicAuth)
	top.wantMe(t, top.edge, tok, c.ID)

	rot := admin.call("POST", "/admin/v1/clients/"+c.ID+"/rotate-secret", nil)
	if rot.status != 200 {
		t.Fatalf("rotate: %d %s", rot.status, rot.body)
	}
	top.wantMeStatus(t, top.edge, tok, http.StatusUnauthorized)
	top.wantInvalidClient(t, c)
	fresh := credentials{ID: c.ID, Secret: rot.object(t)["client_secret"].(string)}
	freshTok := top.token(t, fresh, basicAuth)
	top.wantMe(t, top.edge, freshTok, c.ID)

	// A rotation without downtime: add a second secret, retire the first;
	// the retired secret's token dies at once, the new one's lives.
	add := admin.call("POST", "/admin/v1/clients/"+c.ID+"/secrets", nil, "Idempotency-Key", "8e1d2c3b-4a5f-4e6d-9c7b-0a1f2e3d4c5b")
	if add.status != 201 {
		t.Fatalf("add secret: %d %s", add.status, add.body)
	}
	second := credentials{ID: c.ID, Secret: add.object(t)["client_secret"].(string)}
	secondTok := top.token(t, second, basicAuth)
	top.wantMe(t, top.edge, secondTok, c.ID)
	oldID := rot.object(t)["secrets"].([]any)[0].(map[string]any)["secret_id"]
	if a := admin.call("DELETE", fmt.Sprintf("/admin/v1/clients/%s/secrets/%v", c.ID, oldID), nil); a.status != 200 {
		t.Fatalf("retire secret %v: %d %s", oldID, a.status, a.body)
	}
	top.wantMeStatus(t, top.edge, freshTok, http.StatusUnauthorized)
	top.wantInvalidClient(t, fresh)
	top.wantMe(t, top.edge, secondTok, c.ID)

	// The partner API refuses an operator's token.
	opTok := top.token(t, op, basicAuth)
	top.wantMeStatus(t, top.edge, opTok, http.StatusUnauthorized)

	list := admin.call("GET", "/admin/v1/clients?org=admin-e2e", nil)
	if list.status != 200 || strings.Count(string(list.body), `"client_id"`) != 1 {
		t.Fatalf("list: %d %s", list.status, list.body)
	}
	trail := admin.call("GET", "/admin/v1/audit?limit=10", nil)
	if trail.status != 200 || !strings.Contains(string(trail.body), `"operator":"`+op.ID+`"`) {
		t.Fatalf("audit: %d %s", trail.status, trail.body)
	}
	if a := admin.call("GET", "/admin/v1/clients/"+c.ID+"/audit", nil); !strings.Contains(string(a.body), "operator="+op.ID) {
		t.Fatalf("client audit names no operator: %s", a.body)
	}
	// The admin listener's calls are in the token service's metrics.
	m := top.get(t, "http://"+top.auth[0].metrics+"/metrics")
	if !strings.Contains(string(m.body), `partnerapi_http_requests_total{code="2xx",method="POST",route="/admin/v1/clients"}`) {
		t.Errorf("no admin route in the metrics:\n%s", grepLines(string(m.body), "/admin/"))
	}
	// Revoking the operator ends its access on the next call.
	top.cli(t, "clients", "revoke", op.ID)
	if a := admin.call("GET", "/admin/v1/orgs", nil); a.status != 401 {
		t.Fatalf("revoked operator's next call: %d %s", a.status, a.body)
	}
}

// grepLines keeps the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
