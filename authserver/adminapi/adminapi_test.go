package adminapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

var secretRE = regexp.MustCompile(`^svc_cs_[0-9A-Za-z]{43}$`)

// TestJourney: an operator with admin.write does through the API what the
// command line does, and each change shows on the partner side at once.
func TestJourney(t *testing.T) {
	s := newStack(t, options{})
	op, _, hc := s.operator(false)

	a := s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "acme-health", "name": "Acme Health", "environment": "live"})
	if a.Status != 201 || a.Header.Get("Location") != "/admin/v1/orgs/acme-health" {
		t.Fatalf("create org: %d %s %s", a.Status, a.Header.Get("Location"), a.Body)
	}
	if got := s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "acme-health", "name": "Acme Health", "environment": "live"}); got.Status != 409 || got.json(t)["code"] != "exists" {
		t.Fatalf("create org again: %d %s", got.Status, got.Body)
	}
	a = s.call(hc, "POST", "/admin/v1/clients", map[string]any{"organization_slug": "acme-health", "name": "EHR", "audience": "hospital", "scopes": []string{"patients.read"}, "rate_limit_per_minute": 240})
	if a.Status != 201 {
		t.Fatalf("create client: %d %s", a.Status, a.Body)
	}
	c := a.json(t)
	id, secret := c["client_id"].(string), c["client_secret"].(string)
	if !secretRE.MatchString(secret) || a.Header.Get("Location") != "/admin/v1/clients/"+id || c["rate_limit_per_minute"] != 240.0 || a.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("created client %s, Location %q", a.Body, a.Header.Get("Location"))
	}
	if st := s.tokenStatus(id, secret); st != 200 {
		t.Fatalf("the new secret at the token endpoint: %d", st)
	}
	a = s.call(hc, "GET", "/admin/v1/clients/"+id, nil)
	if a.Status != 200 || strings.Contains(string(a.Body), `"client_secret":`) || a.json(t)["organization_name"] != "Acme Health" {
		t.Fatalf("show client: %d %s", a.Status, a.Body)
	}
	a = s.call(hc, "POST", "/admin/v1/clients/"+id+"/rotate-secret", nil)
	newSecret, _ := a.json(t)["client_secret"].(string)
	if a.Status != 200 || !secretRE.MatchString(newSecret) || a.json(t)["credential_generation"] != 2.0 {
		t.Fatalf("rotate: %d %s", a.Status, a.Body)
	}
	if old, fresh := s.tokenStatus(id, secret), s.tokenStatus(id, newSecret); old != 401 || fresh != 200 {
		t.Fatalf("after rotation: old secret %d, new %d; want 401, 200", old, fresh)
	}
	a = s.call(hc, "PUT", "/admin/v1/clients/"+id+"/rate-limit", map[string]any{"rate_limit_per_minute": 600})
	if a.Status != 200 || a.json(t)["rate_limit_per_minute"] != 600.0 {
		t.Fatalf("rate limit: %d %s", a.Status, a.Body)
	}
	a = s.call(hc, "PUT", "/admin/v1/clients/"+id+"/token-rate-limit", map[string]any{"token_rate_limit_per_minute": 5})
	if a.Status != 200 || a.json(t)["token_rate_limit_per_minute"] != 5.0 {
		t.Fatalf("token rate limit: %d %s", a.Status, a.Body)
	}
	for _, bad := range []map[string]any{{"rate_limit_per_minute": 0}, {"token_rate_limit_per_minute": 5}, {"rate_limit_per_minute": 1, "token_rate_limit_per_minute": 1}} {
		if a := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/rate-limit", bad); a.Status != 400 {
			t.Errorf("rate limit %v: %d %s, want 400", bad, a.Status, a.Body)
		}
	}
	a = s.call(hc, "GET", "/admin/v1/clients/"+id+"/audit", nil)
	var audit struct {
		Items []struct{ Event, Detail string } `json:"items"`
	}
	_ = json.Unmarshal(a.Body, &audit)
	if a.Status != 200 || len(audit.Items) != 4 || audit.Items[1].Event != "client.rotate" ||
		!strings.Contains(audit.Items[1].Detail, "operator="+op.ID) || !strings.Contains(audit.Items[1].Detail, "request_id=") || !strings.Contains(audit.Items[1].Detail, "address=127.0.0.1") {
		t.Fatalf("client audit: %d %s", a.Status, a.Body)
	}
	if a := s.call(hc, "GET", "/admin/v1/orgs/acme-health/audit", nil); a.Status != 200 || strings.Count(string(a.Body), `"event"`) != 5 {
		t.Fatalf("org audit: %d %s", a.Status, a.Body)
	}
	a = s.call(hc, "POST", "/admin/v1/clients/"+id+"/revoke", nil)
	if a.Status != 200 || a.json(t)["status"] != "revoked" {
		t.Fatalf("revoke: %d %s", a.Status, a.Body)
	}
	if st := s.tokenStatus(id, newSecret); st != 401 {
		t.Fatalf("revoked client's token request: %d", st)
	}
	if a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/rotate-secret", nil); a.Status != 409 || a.json(t)["code"] != "revoked" {
		t.Fatalf("rotate a revoked client: %d %s", a.Status, a.Body)
	}
	a = s.call(hc, "GET", "/admin/v1/keys", nil)
	if a.Status != 200 || a.json(t)["signing_kid"] == "" {
		t.Fatalf("keys: %d %s", a.Status, a.Body)
	}
	signing := a.json(t)["signing_kid"].(string)
	if a := s.call(hc, "POST", "/admin/v1/keys/"+signing+"/withdraw", nil); a.Status != 409 || a.json(t)["code"] != "signing_key" {
		t.Fatalf("withdraw the signing key: %d %s", a.Status, a.Body)
	}
	if a := s.call(hc, "POST", "/admin/v1/keys/no-such-kid/withdraw", nil); a.Status != 404 {
		t.Fatalf("withdraw an unknown key: %d %s", a.Status, a.Body)
	}
	a = s.call(hc, "POST", "/admin/v1/sandbox/seed", nil)
	if a.Status != 200 || strings.Count(string(a.Body), `"client_secret":`) != 3 {
		t.Fatalf("seed: %d %s", a.Status, a.Body)
	}
	if a := s.call(hc, "POST", "/admin/v1/sandbox/seed", nil); a.Status != 200 || strings.Contains(string(a.Body), `"client_secret":`) {
		t.Fatalf("seed again: %d %s", a.Status, a.Body)
	}
	if a := s.call(hc, "GET", "/admin/v1/orgs", nil); a.Status != 200 || strings.Count(string(a.Body), `"slug"`) != 3 {
		t.Fatalf("orgs: %d %s", a.Status, a.Body)
	}
	// Every call above is in the admin audit, newest first, with who,
	// which request and from where.
	a = s.call(hc, "GET", "/admin/v1/audit?limit=500", nil)
	var trail struct {
		Items []struct {
			Operator, Address, Method, Route, Path string
			RequestID                              string `json:"request_id"`
			Status                                 int
		} `json:"items"`
	}
	_ = json.Unmarshal(a.Body, &trail)
	// The listing itself is recorded after it is answered.
	if a.Status != 200 || len(trail.Items) != 20 {
		t.Fatalf("admin audit: %d, %d entries: %s", a.Status, len(trail.Items), a.Body)
	}
	first := trail.Items[len(trail.Items)-1]
	if first.Operator != op.ID || first.RequestID == "" || first.Address != "127.0.0.1" || first.Method != "POST" || first.Route != "POST /admin/v1/orgs" || first.Status != 201 {
		t.Fatalf("first audit entry %+v", first)
	}
}

// TestListClientsPages walks the cursor and filters by organisation.
func TestListClientsPages(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "pages", "name": "Pages", "environment": "sandbox"})
	var want []string
	for range 5 {
		a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "pages", "name": "c", "audience": "pharma"})
		want = append(want, a.json(t)["client_id"].(string))
	}
	slices.Sort(want)
	var got []string
	cursor := ""
	for range 5 {
		a := s.call(hc, "GET", "/admin/v1/clients?org=pages&limit=2"+cursor, nil)
		var p struct {
			Items []struct {
				ID string `json:"client_id"`
			} `json:"items"`
			Next string `json:"next_cursor"`
		}
		if err := json.Unmarshal(a.Body, &p); err != nil || a.Status != 200 {
			t.Fatalf("page: %d %s", a.Status, a.Body)
		}
		for _, c := range p.Items {
			got = append(got, c.ID)
		}
		if p.Next == "" {
			break
		}
		cursor = "&cursor=" + p.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	for path, status := range map[string]int{"/admin/v1/clients?org=nope": 404, "/admin/v1/clients?limit=0": 400, "/admin/v1/clients?limit=501": 400, "/admin/v1/clients?cursor=%21%21": 400,
		// Cursors the API never gave: base64url, but not of a client id.
		"/admin/v1/clients?cursor=zzz": 400, "/admin/v1/clients?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("svc_")): 400,
		"/admin/v1/audit?cursor=zzz": 400, "/admin/v1/audit?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("1-x")): 400,
		// One of the form it gives pages on.
		"/admin/v1/audit?cursor=" + base64.RawURLEncoding.EncodeToString([]byte("1-0")): 200} {
		if a := s.call(hc, "GET", path, nil); a.Status != status {
			t.Errorf("GET %s: %d %s, want %d", path, a.Status, a.Body, status)
		}
	}
}

// TestAccess: who may call what (RFC 6750 section 3.1 challenges).
func TestAccess(t *testing.T) {
	s := newStack(t, options{})
	_, _, reader := s.operator(true)
	if a := s.call(reader, "GET", "/admin/v1/orgs", nil); a.Status != 200 {
		t.Fatalf("read-only operator reads: %d %s", a.Status, a.Body)
	}
	a := s.call(reader, "POST", "/admin/v1/orgs", map[string]any{"slug": "x1", "name": "X", "environment": "live"})
	if a.Status != 403 || a.json(t)["code"] != "insufficient_scope" || a.Header.Get("WWW-Authenticate") != `Bearer realm="admin", error="insufficient_scope", scope="admin.write"` {
		t.Fatalf("read-only operator writes: %d %v %s", a.Status, a.Header, a.Body)
	}
	// A writer whose token was narrowed to admin.read cannot write either.
	_, _, narrowed := s.operator(false, "admin.read")
	if a := s.call(narrowed, "POST", "/admin/v1/sandbox/seed", nil); a.Status != 403 {
		t.Fatalf("narrowed token writes: %d %s", a.Status, a.Body)
	}
	// A partner's token is never an operator's.
	if _, err := s.store.CreateOrg(t.Context(), clientsOrg("partner-org")); err != nil {
		t.Fatal(err)
	}
	pid, psecret := s.partner("partner-org")
	if a := s.call(s.clientFor(pid, psecret), "GET", "/admin/v1/orgs", nil); a.Status != 403 || a.json(t)["code"] != "insufficient_scope" {
		t.Fatalf("partner token: %d %s", a.Status, a.Body)
	}
	for name, hdr := range map[string][]string{
		"no token":      nil,
		"basic":         {"Authorization", "Basic eDp5"},
		"garbage token": {"Authorization", "Bearer svc_at_garbage"},
		"not b64token":  {"Authorization", "Bearer a b"},
	} {
		a := s.call(nil, "GET", "/admin/v1/orgs", nil, hdr...)
		if a.Status != 401 || !strings.HasPrefix(a.Header.Get("WWW-Authenticate"), `Bearer realm="admin"`) || a.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %v %s", name, a.Status, a.Header, a.Body)
		}
	}
	// Revoking an operator kills its tokens at once.
	op, _, hc := s.operator(false)
	if a := s.call(hc, "GET", "/admin/v1/keys", nil); a.Status != 200 {
		t.Fatal(a.Status)
	}
	if _, err := s.store.Revoke(t.Context(), op.ID); err != nil {
		t.Fatal(err)
	}
	if a := s.call(hc, "GET", "/admin/v1/keys", nil); a.Status != 401 {
		t.Fatalf("revoked operator's token: %d %s", a.Status, a.Body)
	}
}

// TestProblems: malformed requests get problem details, never a 500.
func TestProblems(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	cases := []struct {
		name, method, path string
		body               any
		header             []string
		status             int
		code               string
	}{
		{"unknown path", "GET", "/admin/v1/nothing", nil, nil, 404, "not_found"},
		{"wrong method", "DELETE", "/admin/v1/orgs", nil, nil, 405, "method_not_allowed"},
		{"unknown client", "GET", "/admin/v1/clients/svc_aaaaaaaaaaaaaaaaaaaaaaaa", nil, nil, 404, "not_found"},
		{"malformed client id", "GET", "/admin/v1/clients/nope", nil, nil, 404, "not_found"},
		{"unknown org", "GET", "/admin/v1/orgs/nope", nil, nil, 404, "not_found"},
		{"not JSON", "POST", "/admin/v1/orgs", "{", nil, 400, "invalid_request"},
		{"unknown member", "POST", "/admin/v1/orgs", map[string]any{"slug": "a", "name": "A", "environment": "live", "x": 1}, nil, 400, "invalid_request"},
		{"two values", "POST", "/admin/v1/orgs", `{"slug":"a","name":"A","environment":"live"} {}`, nil, 400, "invalid_request"},
		{"wrong type", "POST", "/admin/v1/orgs", `{"slug":1}`, nil, 400, "invalid_request"},
		{"no body", "POST", "/admin/v1/orgs", nil, nil, 400, "invalid_request"},
		{"invalid input", "POST", "/admin/v1/orgs", map[string]any{"slug": "Bad Slug", "name": "", "environment": "moon"}, nil, 400, "invalid_input"},
		{"reserved slug", "POST", "/admin/v1/orgs", map[string]any{"slug": "operators", "name": "O", "environment": "live"}, nil, 400, "invalid_input"},
		{"operator audience", "POST", "/admin/v1/clients", map[string]any{"organization_slug": "operators", "name": "n", "audience": "operator", "scopes": []string{"admin.write"}}, nil, 400, "invalid_input"},
		{"body on rotate", "POST", "/admin/v1/clients/svc_aaaaaaaaaaaaaaaaaaaaaaaa/rotate-secret", map[string]any{}, nil, 400, "invalid_request"},
		{"text body", "POST", "/admin/v1/orgs", nil, []string{"Content-Type", "text/plain"}, 400, "invalid_request"},
		{"short idempotency key", "POST", "/admin/v1/sandbox/seed", nil, []string{"Idempotency-Key", "short"}, 400, "invalid_request"},
		{"too large", "POST", "/admin/v1/orgs", `{"name":"` + strings.Repeat("a", 70<<10) + `"}`, nil, 413, "too_large"},
	}
	for _, tc := range cases {
		a := s.call(hc, tc.method, tc.path, tc.body, tc.header...)
		if a.Status != tc.status || a.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s %s, want %d", tc.name, a.Status, a.Header.Get("Content-Type"), a.Body, tc.status)
			continue
		}
		p := a.json(t)
		if p["code"] != tc.code || p["type"] != "about:blank" || p["status"] != float64(tc.status) || p["title"] != http.StatusText(tc.status) || p["request_id"] != a.Header.Get("X-Request-Id") {
			t.Errorf("%s: problem %s", tc.name, a.Body)
		}
	}
	a := s.call(hc, "PUT", "/admin/v1/orgs", nil)
	if a.Header.Get("Allow") != "GET, HEAD, POST" {
		t.Errorf("405 Allow %q", a.Header.Get("Allow"))
	}
	// A body with the wrong media type.
	a = s.call(hc, "POST", "/admin/v1/orgs", nil, "Content-Type", "text/plain")
	_ = a
}

// TestIdempotency: a retried create with its key makes one client and
// answers the same secret; the key cannot be reused for another request;
// no secret is at rest in the clear.
func TestIdempotency(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "idem", "name": "Idem", "environment": "live"})
	body := map[string]any{"organization_slug": "idem", "name": "EHR", "audience": "pharma", "scopes": []string{}}
	key := "3f2b1c9e-4a6d-4e8f-9b0a-1c2d3e4f5a6b"
	first := s.call(hc, "POST", "/admin/v1/clients", body, "Idempotency-Key", key)
	second := s.call(hc, "POST", "/admin/v1/clients", body, "Idempotency-Key", `"`+key+`"`)
	if first.Status != 201 || second.Status != 201 || string(first.Body) != string(second.Body) || second.Header.Get("Idempotent-Replayed") != "true" || first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("replay: %d %s / %d %v %s", first.Status, first.Body, second.Status, second.Header, second.Body)
	}
	if second.Header.Get("Location") != first.Header.Get("Location") {
		t.Fatalf("replayed Location %q, want %q", second.Header.Get("Location"), first.Header.Get("Location"))
	}
	list := s.call(hc, "GET", "/admin/v1/clients?org=idem", nil)
	if n := strings.Count(string(list.Body), `"client_id"`); n != 1 {
		t.Fatalf("%d clients after a retried create, want 1", n)
	}
	other := map[string]any{"organization_slug": "idem", "name": "Other", "audience": "pharma", "scopes": []string{}}
	if a := s.call(hc, "POST", "/admin/v1/clients", other, "Idempotency-Key", key); a.Status != 422 || a.json(t)["code"] != "idempotency_key_reused" {
		t.Fatalf("key reused for another body: %d %s", a.Status, a.Body)
	}
	// Another operator's same key is its own.
	_, _, hc2 := s.operator(false)
	if a := s.call(hc2, "POST", "/admin/v1/clients", other, "Idempotency-Key", key); a.Status != 201 {
		t.Fatalf("another operator's key: %d %s", a.Status, a.Body)
	}
	// A refused request frees its key for a corrected one.
	k2 := "7d1e2f3a-0b4c-4d5e-8f6a-7b8c9d0e1f2a"
	if a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "idem", "name": "", "audience": "pharma"}, "Idempotency-Key", k2); a.Status != 400 {
		t.Fatalf("bad create: %d", a.Status)
	}
	if a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "idem", "name": "Fixed", "audience": "pharma"}, "Idempotency-Key", k2); a.Status != 201 {
		t.Fatalf("corrected create with the same key: %d %s", a.Status, a.Body)
	}
	// A retried rotation rotates once.
	id := first.json(t)["client_id"].(string)
	k3 := "0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"
	r1 := s.call(hc, "POST", "/admin/v1/clients/"+id+"/rotate-secret", nil, "Idempotency-Key", k3)
	r2 := s.call(hc, "POST", "/admin/v1/clients/"+id+"/rotate-secret", nil, "Idempotency-Key", k3)
	if r1.Status != 200 || string(r1.Body) != string(r2.Body) || r2.json(t)["credential_generation"] != 2.0 {
		t.Fatalf("retried rotation: %s / %s", r1.Body, r2.Body)
	}
	if st := s.tokenStatus(id, r2.json(t)["client_secret"].(string)); st != 200 {
		t.Fatalf("the replayed secret: %d", st)
	}
	// Nothing in Redis holds a secret in the clear.
	secrets := []string{first.json(t)["client_secret"].(string), r1.json(t)["client_secret"].(string)}
	keys, err := redistest.Keys(t.Context(), s.rdb, s.prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	idem := 0
	for _, k := range keys {
		if strings.Contains(k, "{idem:") {
			idem++
		}
		dump, _ := s.rdb.Dump(t.Context(), k).Result()
		for _, sec := range secrets {
			if strings.Contains(dump, sec) || strings.Contains(dump, sec[7:]) {
				t.Fatalf("key %s holds a secret", k)
			}
		}
	}
	if idem != 4 {
		t.Fatalf("%d idempotency records, want 4", idem)
	}
}

// TestIdempotencyConcurrent: of concurrent requests with one key, one
// runs; the others get 409 while it runs or its replay after.
func TestIdempotencyConcurrent(t *testing.T) {
	s := newStack(t, options{})
	_, _, hc := s.operator(false)
	s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "conc", "name": "Conc", "environment": "live"})
	body := map[string]any{"organization_slug": "conc", "name": "EHR", "audience": "pharma", "scopes": []string{}}
	var wg sync.WaitGroup
	answers := make([]answer, 8)
	for i := range answers {
		wg.Go(func() {
			answers[i] = s.call(hc, "POST", "/admin/v1/clients", body, "Idempotency-Key", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee")
		})
	}
	wg.Wait()
	var created string
	for _, a := range answers {
		switch a.Status {
		case 201:
			if created != "" && created != string(a.Body) {
				t.Fatalf("two different answers: %s / %s", created, a.Body)
			}
			created = string(a.Body)
		case 409:
			if a.Header.Get("Retry-After") != "1" {
				t.Fatalf("409 without Retry-After")
			}
		default:
			t.Fatalf("%d %s", a.Status, a.Body)
		}
	}
	if n := strings.Count(string(s.call(hc, "GET", "/admin/v1/clients?org=conc", nil).Body), `"client_id"`); n != 1 {
		t.Fatalf("%d clients, want 1", n)
	}
}

// TestUnconfirmedWrites: on a primary whose replicas do not confirm (here
// a node with none, asked for one), a create or a rotation answers 202
// with the result in force (the secret that works now) and says how many
// replicas acknowledged and how many the primary has; its retry with the
// same key gives the same answer, not a second client or rotation.
func TestUnconfirmedWrites(t *testing.T) {
	s := newStack(t, options{confirm: redisconn.Confirmation{Replicas: 2, Timeout: 50 * time.Millisecond}})
	_, _, hc := s.operator(false)
	a := s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "unconf", "name": "U", "environment": "live"})
	if a.Status != 202 {
		t.Fatalf("create org: %d %s", a.Status, a.Body)
	}
	key := "11111111-2222-4333-8444-555555555555"
	a = s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "unconf", "name": "EHR", "audience": "pharma"}, "Idempotency-Key", key)
	v := a.json(t)
	warning, _ := v["warning"].(string)
	if a.Status != 202 || !secretRE.MatchString(fmt.Sprint(v["client_secret"])) ||
		!strings.Contains(warning, "confirmed by 0 of the 2 replica(s) required within 50ms; the primary has only 0 replica(s) connected") {
		t.Fatalf("unconfirmed create: %d %s", a.Status, a.Body)
	}
	id, secret := v["client_id"].(string), v["client_secret"].(string)
	if st := s.tokenStatus(id, secret); st != 200 {
		t.Fatalf("the unconfirmed client's secret: %d", st)
	}
	again := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"scopes": []string{}, "organization_slug": "unconf", "name": "EHR", "audience": "pharma"}, "Idempotency-Key", key)
	if again.Status != 202 || string(again.Body) != string(a.Body) {
		t.Fatalf("retry: %d %s", again.Status, again.Body)
	}
	r := s.call(hc, "POST", "/admin/v1/clients/"+id+"/rotate-secret", nil)
	rs, _ := r.json(t)["client_secret"].(string)
	if r.Status != 202 || !secretRE.MatchString(rs) {
		t.Fatalf("unconfirmed rotation: %d %s", r.Status, r.Body)
	}
	if old, fresh := s.tokenStatus(id, secret), s.tokenStatus(id, rs); old != 401 || fresh != 200 {
		t.Fatalf("after an unconfirmed rotation: old %d, new %d", old, fresh)
	}
}

// TestOpenAPIServed: the document is served without a token, as JSON.
func TestOpenAPIServed(t *testing.T) {
	s := newStack(t, options{})
	a := s.call(nil, "GET", "/admin/v1/openapi.json", nil)
	if a.Status != 200 || a.json(t)["openapi"] != "3.1.0" {
		t.Fatalf("%d %s", a.Status, a.Body[:min(len(a.Body), 200)])
	}
}
