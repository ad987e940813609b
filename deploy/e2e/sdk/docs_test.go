package sdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// reply is an answer as the wire carried it.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// docsFixture is the stack the documented examples run against, with the
// documentation's example client: "Example hospital integration" of the
// sandbox organisation, holding programme.metrics.read and
// events.subscribe.
type docsFixture struct {
	t      *testing.T
	s      *stack
	id     string
	secret string
	// down is a stack whose Redis was killed, with a client and a token
	// of it (see downToken).
	down                        *stack
	downID, downSecret, downTok string
	// addr hands each scenario a client address of its own, so one
	// scenario's failed authentications never block another's.
	addr int
	// scripts are the guides' shell blocks marked "<!-- script: KEY -->",
	// run by the scenario KEY; keyed holds the private_key_jwt clients
	// whose keys they made.
	scripts map[string]block
	keyed   map[string]*keyClient
}

func (f *docsFixture) send(req *http.Request) reply {
	f.t.Helper()
	f.addr++
	req.Header.Set("X-Forwarded-For", "198.51.100."+strconv.Itoa(f.addr))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return reply{resp.StatusCode, resp.Header, body}
}

func (f *docsFixture) request(method, path, contentType, body string, mods ...func(*http.Request)) reply {
	f.t.Helper()
	req, err := http.NewRequest(method, f.s.url+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, m := range mods {
		m(req)
	}
	return f.send(req)
}

var (
	basicAuth = e2etest.Basic
	bearer    = e2etest.Bearer
)

const formType = "application/x-www-form-urlencoded"

// token gets a token of the example client.
func (f *docsFixture) token(id, secret string) string {
	f.t.Helper()
	r := f.request(http.MethodPost, tokenPath, formType, "grant_type=client_credentials", basicAuth(id, secret))
	var tr struct {
		AccessToken string `json:"access_token"`
	}
	if r.Status != 200 || json.Unmarshal(r.Body, &tr) != nil {
		f.t.Fatalf("token: %d %s", r.Status, r.Body)
	}
	return tr.AccessToken
}

// fresh creates another client of the sandbox organisation, for scenarios
// that exhaust a limit.
func (f *docsFixture) fresh() (string, string) {
	f.t.Helper()
	c, secret, err := f.s.store.CreateClient(context.Background(), clients.ClientSpec{
		OrgSlug: "sandbox-simulation", Name: "Example hospital integration", Audience: clients.AudienceHospital,
		Scopes: []string{clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe},
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return c.ID, secret
}

// scenarios produce each documented answer on the real servers. A key is
// "METHOD path status", with the example's name when the document names
// several examples of one status.
func scenarios(f *docsFixture) map[string]func() reply {
	grant := "grant_type=client_credentials"
	all := map[string]func() reply{
		"POST /api/v1/oauth/token/ 200": func() reply {
			return f.request(http.MethodPost, tokenPath, formType, grant, basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/token/ 200 narrowed": func() reply {
			return f.request(http.MethodPost, tokenPath, formType, grant+"&scope=programme.metrics.read", basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/token/ 400 invalid_request": func() reply {
			return f.request(http.MethodPost, tokenPath, "application/json", `["grant_type"]`, basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/token/ 400 unsupported_grant_type": func() reply {
			return f.request(http.MethodPost, tokenPath, formType, "grant_type=password", basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/token/ 400 invalid_scope": func() reply {
			return f.request(http.MethodPost, tokenPath, formType, grant+"&scope=patients.read", basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/token/ 401": func() reply {
			return f.request(http.MethodPost, tokenPath, formType, grant, basicAuth(f.id, clients.NewSecret()))
		},
		"POST /api/v1/oauth/token/ 400 invalid_dpop_proof": func() reply {
			// A proof made for another URL (htu) than the token endpoint's.
			p := newDPoPProof(f.t, http.MethodPost, issuer+"/api/v1/oauth/introspect/", time.Now())
			return f.request(http.MethodPost, tokenPath, formType, grant, basicAuth(f.id, f.secret), func(r *http.Request) { r.Header.Set("DPoP", p) })
		},
		"POST /api/v1/oauth/token/ 429": func() reply {
			id, secret := f.fresh()
			for range clients.DefaultTokenRateLimitPerMinute {
				f.token(id, secret)
			}
			return f.request(http.MethodPost, tokenPath, formType, grant, basicAuth(id, secret))
		},
		"POST /api/v1/oauth/introspect/ 200 active": func() reply {
			return f.request(http.MethodPost, introspectPath, formType, "token="+f.token(f.id, f.secret), basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/introspect/ 200 inactive": func() reply {
			return f.request(http.MethodPost, introspectPath, formType, "token=svc_at_expired", basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/introspect/ 400": func() reply {
			return f.request(http.MethodPost, introspectPath, formType, "", basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/introspect/ 401": func() reply {
			return f.request(http.MethodPost, introspectPath, formType, "token=x", basicAuth(f.id, clients.NewSecret()))
		},
		"POST /api/v1/oauth/introspect/ 429": func() reply { return f.failPastLimit(introspectPath) },
		"POST /api/v1/oauth/revoke/ 200": func() reply {
			tok := f.token(f.id, f.secret)
			r := f.request(http.MethodPost, revokePath, formType, "token="+tok, basicAuth(f.id, f.secret))
			if me := f.request(http.MethodGet, pathMe, "", "", bearer(tok)); me.Status != http.StatusUnauthorized {
				f.t.Errorf("GET /api/v1/me/ with a revoked token: %d %s, want 401", me.Status, me.Body)
			}
			return r
		},
		"POST /api/v1/oauth/revoke/ 400 invalid_request": func() reply {
			return f.request(http.MethodPost, revokePath, formType, "", basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/revoke/ 400 unauthorized_client": func() reply {
			other := f.token(f.fresh())
			return f.request(http.MethodPost, revokePath, formType, "token="+other, basicAuth(f.id, f.secret))
		},
		"POST /api/v1/oauth/revoke/ 401": func() reply {
			return f.request(http.MethodPost, revokePath, formType, "token=x", basicAuth(f.id, clients.NewSecret()))
		},
		"POST /api/v1/oauth/revoke/ 429": func() reply { return f.failPastLimit(revokePath) },
		"POST /api/v1/oauth/revoke/ 503": func() reply {
			f.downToken() // the stack first: its client's id and secret
			return f.onDown(http.MethodPost, revokePath, formType, "token="+f.downTok, basicAuth(f.downID, f.downSecret))
		},
		"jwks.json":         func() reply { return f.keysFromScript("jwks.json") },
		"jwks.json Ed25519": func() reply { return f.keysFromScript("jwks.json Ed25519") },
		"assertion header":  func() reply { return f.sdkAssertionPart(0) },
		"assertion claims":  func() reply { return f.sdkAssertionPart(1) },
		"GET /.well-known/jwks.json 200": func() reply {
			return f.request(http.MethodGet, "/.well-known/jwks.json", "", "")
		},
		"GET /.well-known/oauth-authorization-server 200": func() reply {
			return f.request(http.MethodGet, "/.well-known/oauth-authorization-server", "", "")
		},
		"GET /.well-known/openid-configuration 404": func() reply {
			return f.request(http.MethodGet, "/.well-known/openid-configuration", "", "")
		},
		"GET /api/v1/me/ 200": func() reply {
			id, secret := f.fresh()
			return f.request(http.MethodGet, pathMe, "", "", bearer(f.token(id, secret)))
		},
		"GET /api/v1/me/ 400": func() reply {
			tok := f.token(f.id, f.secret)
			return f.request(http.MethodGet, pathMe+"?access_token="+tok, "", "", bearer(tok))
		},
		"GET /api/v1/me/ 401": func() reply {
			return f.request(http.MethodGet, pathMe, "", "", bearer("svc_at_expired"))
		},
		"GET /api/v1/me/ 401 invalid_token": func() reply {
			return f.request(http.MethodGet, pathMe, "", "", bearer("svc_at_expired"))
		},
		"GET /api/v1/me/ 401 no token": func() reply {
			return f.request(http.MethodGet, pathMe, "", "")
		},
		"GET /api/v1/me/ 429": func() reply {
			id, secret := f.fresh()
			tok := f.token(id, secret)
			for range clients.DefaultRateLimitPerMinute {
				f.request(http.MethodGet, pathMe, "", "", bearer(tok))
			}
			return f.request(http.MethodGet, pathMe, "", "", bearer(tok))
		},
		"GET /api/v1/schema/ 400": func() reply {
			return f.request(http.MethodGet, "/api/v1/schema/?format=yaml", "", "")
		},
		"GET /docs/{page}.md 404": func() reply { return f.request(http.MethodGet, "/docs/nope.md", "", "") },
		// 405: a wrong method on every documented path, the token
		// service's in the OAuth error format.
		"POST /api/v1/oauth/token/ 405":      func() reply { return f.request(http.MethodGet, tokenPath, "", "") },
		"POST /api/v1/oauth/introspect/ 405": func() reply { return f.request(http.MethodGet, introspectPath, "", "") },
		"POST /api/v1/oauth/revoke/ 405":     func() reply { return f.request(http.MethodPut, revokePath, "", "") },
		"GET /.well-known/jwks.json 405":     func() reply { return f.request(http.MethodPost, "/.well-known/jwks.json", "", "") },
		"GET /.well-known/oauth-authorization-server 405": func() reply {
			return f.request(http.MethodPost, "/.well-known/oauth-authorization-server", "", "")
		},
		"GET /api/v1/me/ 405":     func() reply { return f.request(http.MethodPost, pathMe, "", "") },
		"GET /api/v1/schema/ 405": func() reply { return f.request(http.MethodDelete, "/api/v1/schema/", "", "") },
		"GET /llms.txt 405":       func() reply { return f.request(http.MethodPost, "/llms.txt", "", "") },
		"GET /llms-full.txt 405":  func() reply { return f.request(http.MethodPost, "/llms-full.txt", "", "") },
		"GET /docs/{page}.md 405": func() reply { return f.request(http.MethodPost, "/docs/quickstart.md", "", "") },
		"GET /healthz 405":        func() reply { return f.request(http.MethodPost, "/healthz", "", "") },
		"GET /readyz 405":         func() reply { return f.request(http.MethodPost, "/readyz", "", "") },
		"GET /healthz 200":        func() reply { return f.request(http.MethodGet, "/healthz", "", "") },
		"GET /readyz 200":         func() reply { return f.request(http.MethodGet, "/readyz", "", "") },
		"GET /readyz 503":         func() reply { return f.onDown(http.MethodGet, "/readyz", "", "") },
		"GET /api/v1/me/ 503": func() reply {
			return f.onDown(http.MethodGet, pathMe, "", "", bearer(f.downToken()))
		},
		"POST /api/v1/oauth/token/ 503": func() reply {
			f.downToken() // the stack first: its client's id and secret
			return f.onDown(http.MethodPost, tokenPath, formType, grant, basicAuth(f.downID, f.downSecret))
		},
		"POST /api/v1/oauth/introspect/ 503": func() reply {
			f.downToken() // the stack first: its client's id and secret
			return f.onDown(http.MethodPost, introspectPath, formType, "token=x", basicAuth(f.downID, f.downSecret))
		},
		"token header": func() reply { return f.tokenPart(0) },
		"token claims": func() reply { return f.tokenPart(1) },
	}
	maps.Copy(all, f.dpopScenarios())
	return all
}

// Paths of introspection and revocation.
const (
	introspectPath = "/api/v1/oauth/introspect/"
	revokePath     = "/api/v1/oauth/revoke/"
)

// failPastLimit sends failed client authentications to path from one
// address, one past the limit, and returns the last answer.
func (f *docsFixture) failPastLimit(path string) reply {
	f.t.Helper()
	f.addr++
	from := func(r *http.Request) { r.Header.Set("X-Forwarded-For", "203.0.113."+strconv.Itoa(f.addr)) }
	var last reply
	for range tokenserver.DefaultFailuresPerMinute + 1 {
		req, _ := http.NewRequest(http.MethodPost, f.s.url+path, strings.NewReader("token=x"))
		req.Header.Set("Content-Type", formType)
		basicAuth(f.id, clients.NewSecret())(req)
		from(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			f.t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		last = reply{resp.StatusCode, resp.Header, body}
	}
	return last
}

// downToken starts, once, a second stack on a Redis of its own with a
// client and its token, then kills that Redis: the stack of the 503s.
func (f *docsFixture) downToken() string {
	f.t.Helper()
	if f.down != nil {
		return f.downTok
	}
	srv := redistest.StartServer(f.t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, DialerRetries: 1})
	f.t.Cleanup(func() { _ = rdb.Close() })
	f.down = newStack(f.t, onRedis(rdb))
	f.downID, f.downSecret = f.down.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	ts, err := partnerclient.NewTokenSource(partnerclient.Config{BaseURL: f.down.url, ClientID: f.downID, ClientSecret: f.downSecret})
	if err != nil {
		f.t.Fatal(err)
	}
	tok, err := ts.Token()
	if err != nil {
		f.t.Fatal(err)
	}
	f.downTok = tok.AccessToken
	srv.Kill()
	return f.downTok
}

// onDown sends a request to the stack whose Redis is dead.
func (f *docsFixture) onDown(method, path, contentType, body string, mods ...func(*http.Request)) reply {
	f.t.Helper()
	f.downToken()
	req, err := http.NewRequest(method, f.down.url+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, m := range mods {
		m(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, b}
}

// notReproducible lists documented answers no request can cause on a
// healthy deployment; the test checks only their shape.
var notReproducible = map[string]string{
	"GET /api/v1/me/ 500": "an internal error",
}

// tokenPart decodes a part of a real access token as the documentation
// tells: strip "svc_at_", split the JWS, base64url-decode.
func (f *docsFixture) tokenPart(i int) reply {
	tok := f.token(f.id, f.secret)
	parts := strings.Split(strings.TrimPrefix(tok, accesstoken.Prefix), ".")
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		f.t.Fatal(err)
	}
	return reply{Status: 200, Header: http.Header{}, Body: raw}
}

// docAnswer is a documented answer: where, status (0: not shown), headers
// and body.
type docAnswer struct {
	where   string
	status  int
	headers http.Header
	body    []byte
	excerpt bool // the body shows some fields only
}

var markerRE = regexp.MustCompile(`^<!-- (example|request|script): (.+?)( \(excerpt\))? -->$`)

// block is a fenced block of a page with the marker above it.
type block struct {
	where, lang, marker, key, text string
	excerpt                        bool
}

// blocks returns the fenced blocks of a Markdown page.
func blocks(page, md string) []block {
	var out []block
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		lang, ok := strings.CutPrefix(lines[i], "```")
		if !ok || lang == "" {
			continue
		}
		b := block{where: fmt.Sprintf("%s line %d", page, i+1), lang: lang}
		for j := i - 1; j >= 0 && j >= i-2; j-- {
			if m := markerRE.FindStringSubmatch(lines[j]); m != nil {
				b.marker, b.key, b.excerpt = m[1], m[2], m[3] != ""
				break
			}
		}
		var text []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			text = append(text, lines[i])
		}
		b.text = strings.Join(text, "\n")
		out = append(out, b)
	}
	return out
}

// parseAnswer reads a documented answer: an http block (status line,
// headers, blank line, body) or a json block (body only).
func parseAnswer(b block) (docAnswer, error) {
	a := docAnswer{where: b.where, headers: http.Header{}, excerpt: b.excerpt}
	if b.lang == "json" {
		a.body = []byte(b.text)
		return a, nil
	}
	head, body, _ := strings.Cut(b.text, "\n\n")
	sc := bufio.NewScanner(strings.NewReader(head))
	sc.Scan()
	f := strings.Fields(sc.Text())
	if len(f) < 2 || f[0] != "HTTP/1.1" {
		return a, fmt.Errorf("%s: not a status line: %q", b.where, sc.Text())
	}
	a.status, _ = strconv.Atoi(f[1])
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ": ")
		if !ok {
			return a, fmt.Errorf("%s: not a header: %q", b.where, sc.Text())
		}
		a.headers.Add(k, v)
	}
	a.body = []byte(body)
	return a, nil
}

// placeholder reports whether a documented string stands for any value:
// it holds "xxxxxxxx" or "…"; the text before must match.
func placeholder(doc string) (string, bool) {
	for _, p := range []string{"xxxxxxxx", "…"} {
		if i := strings.Index(doc, p); i >= 0 {
			return doc[:i], true
		}
	}
	return "", false
}

// variableFields differ in every answer: only their type is compared.
var variableFields = map[string]bool{"exp": true, "iat": true, "token_expires_at": true}

// sameJSON compares a documented JSON value with a real one.
func sameJSON(path string, doc, real any, excerpt bool) []string {
	switch d := doc.(type) {
	case map[string]any:
		r, ok := real.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: documented an object, got %v", path, real)}
		}
		var diffs []string
		for k, dv := range d {
			rv, ok := r[k]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: documented, not sent", path, k))
				continue
			}
			if variableFields[k] {
				if fmt.Sprintf("%T", dv) != fmt.Sprintf("%T", rv) {
					diffs = append(diffs, fmt.Sprintf("%s.%s: documented %T, sent %T", path, k, dv, rv))
				}
				continue
			}
			diffs = append(diffs, sameJSON(path+"."+k, dv, rv, excerpt)...)
		}
		if !excerpt {
			for k := range r {
				if _, ok := d[k]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s.%s: sent, not documented", path, k))
				}
			}
		}
		return diffs
	case []any:
		r, ok := real.([]any)
		if !ok || len(r) != len(d) {
			return []string{fmt.Sprintf("%s: documented %v, sent %v", path, doc, real)}
		}
		var diffs []string
		for i := range d {
			diffs = append(diffs, sameJSON(fmt.Sprintf("%s[%d]", path, i), d[i], r[i], excerpt)...)
		}
		return diffs
	case string:
		if prefix, ok := placeholder(d); ok {
			if r, isStr := real.(string); !isStr || !strings.HasPrefix(r, prefix) {
				return []string{fmt.Sprintf("%s: documented %q, sent %v", path, d, real)}
			}
			return nil
		}
	}
	if fmt.Sprint(doc) != fmt.Sprint(real) {
		return []string{fmt.Sprintf("%s: documented %v, sent %v", path, doc, real)}
	}
	return nil
}

// compare checks a real answer against a documented one.
func compare(a docAnswer, r reply) []string {
	var diffs []string
	if a.status != 0 && a.status != r.Status {
		diffs = append(diffs, fmt.Sprintf("status: documented %d, sent %d", a.status, r.Status))
	}
	for k, vs := range a.headers {
		got := r.Header.Values(k)
		if _, ph := placeholder(vs[0]); ph || strings.HasPrefix(vs[0], "<") {
			if len(got) == 0 {
				diffs = append(diffs, fmt.Sprintf("header %s: documented, not sent", k))
			}
			continue
		}
		if !slices.Equal(got, vs) {
			diffs = append(diffs, fmt.Sprintf("header %s: documented %q, sent %q", k, vs, got))
		}
	}
	if len(bytes.TrimSpace(a.body)) == 0 { // documented as empty
		if len(r.Body) != 0 {
			diffs = append(diffs, fmt.Sprintf("body: documented empty, sent %q", r.Body))
		}
		return diffs
	}
	var doc, real any
	if err := json.Unmarshal(a.body, &doc); err != nil {
		return append(diffs, fmt.Sprintf("documented body is not JSON: %v: %s", err, a.body))
	}
	if err := json.Unmarshal(r.Body, &real); err != nil {
		return append(diffs, fmt.Sprintf("sent body is not JSON: %v: %s", err, r.Body))
	}
	return append(diffs, sameJSON("body", doc, real, a.excerpt)...)
}

// openAPIAnswers reads every response example of the OpenAPI document,
// keyed like the scenarios, with the headers that have an example.
func openAPIAnswers(t *testing.T, doc []byte) map[string]docAnswer {
	type response struct {
		Ref     string                     `json:"$ref"`
		Headers map[string]json.RawMessage `json:"headers"`
		Content map[string]struct {
			Example  json.RawMessage `json:"example"`
			Examples map[string]struct {
				Value json.RawMessage `json:"value"`
			} `json:"examples"`
		} `json:"content"`
	}
	var d struct {
		Paths map[string]map[string]struct {
			Responses map[string]response `json:"responses"`
		} `json:"paths"`
		Components struct {
			Headers   map[string]json.RawMessage `json:"headers"`
			Responses map[string]response        `json:"responses"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	// header is a header's example: of the body example named name when
	// the header has named examples too (as a DPoP challenge has), else
	// its only one.
	header := func(raw json.RawMessage, name string) (string, bool) {
		var h struct {
			Ref      string          `json:"$ref"`
			Example  json.RawMessage `json:"example"`
			Examples map[string]struct {
				Value json.RawMessage `json:"value"`
			} `json:"examples"`
		}
		_ = json.Unmarshal(raw, &h)
		if h.Ref != "" {
			_ = json.Unmarshal(d.Components.Headers[strings.TrimPrefix(h.Ref, "#/components/headers/")], &h)
		}
		if ex, ok := h.Examples[name]; ok {
			h.Example = ex.Value
		}
		if h.Example == nil {
			return "", false
		}
		var s string
		if json.Unmarshal(h.Example, &s) != nil {
			s = string(h.Example) // a number
		}
		return s, true
	}
	out := map[string]docAnswer{}
	for path, ops := range d.Paths {
		for method, op := range ops {
			for status, resp := range op.Responses {
				if resp.Ref != "" {
					ref, ok := d.Components.Responses[strings.TrimPrefix(resp.Ref, "#/components/responses/")]
					if !ok {
						t.Fatalf("%s %s %s: unresolved %s", method, path, status, resp.Ref)
					}
					resp = ref
				}
				code, _ := strconv.Atoi(status)
				headers := func(example string) http.Header {
					hs := http.Header{}
					for name, raw := range resp.Headers {
						if v, ok := header(raw, example); ok {
							hs.Set(name, v)
						}
					}
					return hs
				}
				key := strings.ToUpper(method) + " " + path + " " + status
				for _, c := range resp.Content {
					if c.Example != nil {
						out[key] = docAnswer{where: "openapi.json " + key, status: code, headers: headers(""), body: c.Example}
					}
					for name, ex := range c.Examples {
						out[key+" "+name] = docAnswer{where: "openapi.json " + key + " " + name, status: code, headers: headers(name), body: ex.Value}
					}
				}
			}
		}
	}
	return out
}

// TestDocsEqualTheWire reads the documentation as the servers publish it
// and checks every documented answer (status, headers, body) in the guides
// and the OpenAPI document against what the real servers answer, and runs
// every documented curl command and example request against them.
func TestDocsEqualTheWire(t *testing.T) {
	s := newStack(t, trusting())
	ctx := context.Background()
	if _, err := s.store.CreateOrg(ctx, clients.OrgSpec{Slug: "sandbox-simulation", Name: clients.SandboxOrgName, Environment: clients.EnvironmentSandbox}); err != nil {
		t.Fatal(err)
	}
	f := &docsFixture{t: t, s: s, scripts: map[string]block{}, keyed: map[string]*keyClient{}}
	f.id, f.secret = f.fresh()
	run := scenarios(f)

	get := func(path string) string {
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if strings.Contains(string(b), "{base_url}") || (path == "/llms-full.txt" && !strings.Contains(string(b), s.url)) {
			t.Errorf("GET %s: {base_url} is not replaced by %s", path, s.url)
		}
		return string(b)
	}
	get("/llms-full.txt")
	documented := map[string][]docAnswer{}
	for key, a := range openAPIAnswers(t, []byte(get("/api/v1/schema/?format=json"))) {
		documented[key] = append(documented[key], a)
	}
	var requests []block
	pages := regexp.MustCompile(`\]\((?:`+regexp.QuoteMeta(s.url)+`)?/docs/([a-z-]+)\.md\)`).FindAllStringSubmatch(get("/llms.txt"), -1)
	if len(pages) < 7 {
		t.Fatalf("llms.txt links %d pages", len(pages))
	}
	for _, p := range pages {
		if p[1] == "api-reference" {
			continue // rendered from the OpenAPI document, checked above
		}
		for _, b := range blocks(p[1], get("/docs/"+p[1]+".md")) {
			isCurl := b.lang == "sh" && strings.Contains(b.text, "curl")
			isHTTPRequest := b.lang == "http" && !strings.HasPrefix(b.text, "HTTP/")
			switch {
			case b.marker == "example" && (b.lang == "json" || b.lang == "http"):
				a, err := parseAnswer(b)
				if err != nil {
					t.Error(err)
					continue
				}
				documented[b.key] = append(documented[b.key], a)
			case b.marker == "request" && (isCurl || isHTTPRequest):
				requests = append(requests, b)
			case b.marker == "script" && b.lang == "sh" && strings.HasPrefix(b.key, "mtls "):
				// Over mutual TLS: run by deploy/e2e/mtls's TestRealClients
				// against servers that end TLS, direct and behind the edge.
			case b.marker == "script" && b.lang == "sh":
				if _, ok := run[b.key]; !ok {
					t.Errorf("%s: script %q, which no scenario runs", b.where, b.key)
				}
				f.scripts[b.key] = b
			case b.lang == "json" || isCurl || b.lang == "http":
				t.Errorf("%s: a %s block without an <!-- example: ... --> or <!-- request: ... --> marker: it would go unchecked", b.where, b.lang)
			}
		}
	}

	// Every documented answer against the real one.
	for key, answers := range documented {
		if why, ok := notReproducible[key]; ok {
			t.Logf("%s: not reproduced (%s)", key, why)
			continue
		}
		scenario, ok := run[key]
		if !ok {
			t.Errorf("%s (%s): no scenario reproduces this documented answer", key, answers[0].where)
			continue
		}
		f.clockNow()
		real := scenario()
		for _, a := range answers {
			for _, d := range compare(a, real) {
				t.Errorf("%s, %s: %s", key, a.where, d)
			}
		}
	}

	// Every documented request, sent as written.
	for _, b := range requests {
		answers := documented[b.key]
		if len(answers) == 0 {
			t.Errorf("%s: request for %q, whose answer is documented nowhere", b.where, b.key)
			continue
		}
		var real reply
		f.clockNow()
		if b.lang == "sh" {
			real = f.curl(b)
		} else {
			real = f.httpRequest(b)
		}
		for _, a := range answers {
			if b.lang == "sh" { // curl prints the body only
				a.status, a.headers = 0, nil
			}
			for _, d := range compare(a, real) {
				t.Errorf("%s (request for %s, answer in %s): %s", b.where, b.key, a.where, d)
			}
		}
	}
}

// clockNow sets the stack's clock, which stands still so that a scenario's
// answers do not depend on when it runs, to the time the DPoP proofs,
// assertions and SDK requests of the next scenario are made at: a proof is
// refused once its iat is more than dpop.DefaultLeeway ahead of the
// server's clock, and on a loaded machine the scenarios before it can take
// longer than that.
func (f *docsFixture) clockNow() {
	f.s.serverNow.Set(time.Now().UTC().Truncate(time.Second))
}

// curl runs a documented shell block with the example client's
// credentials in the environment, as the quickstart tells a partner to set
// them; its output is the answer's body.
func (f *docsFixture) curl(b block) reply {
	f.t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		if os.Getenv("CI") == "true" {
			f.t.Fatalf("curl is not installed: %v", err)
		}
		f.t.Skipf("curl is not installed: %v", err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.text)
	f.addr++
	cmd.Env = append(os.Environ(), "BASE_URL="+f.s.url, "CLIENT_ID="+f.id, "CLIENT_SECRET="+f.secret)
	if strings.Contains(b.text, "$ACCESS_TOKEN") && !strings.Contains(b.text, "ACCESS_TOKEN=") {
		cmd.Env = append(cmd.Env, "ACCESS_TOKEN="+f.token(f.id, f.secret))
	}
	if strings.Contains(b.text, "CLIENT_ASSERTION") {
		// The key client made by the guide's own recipe, and a fresh
		// assertion signed with its key.pem.
		f.keysFromScript("jwks.json")
		k := f.keyed["jwks.json"]
		cmd.Env = append(cmd.Env, "KEY_CLIENT_ID="+k.id, "CLIENT_ASSERTION="+k.assertion(f.t, issuer))
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		f.t.Fatalf("%s: %v: %s", b.where, err, stderr.String())
	}
	return reply{Header: http.Header{}, Body: out}
}

// httpRequest sends a documented HTTP request block, with a real token in
// place of the documented one.
func (f *docsFixture) httpRequest(b block) reply {
	f.t.Helper()
	text := strings.ReplaceAll(b.text, "svc_at_xxxxxxxx", f.token(f.fresh())) // a client with its whole minute ahead
	head, body, _ := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	parts := strings.Fields(lines[0])
	req, err := http.NewRequest(parts[0], f.s.url+parts[1], strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(l, ": ")
		req.Header.Add(k, v)
	}
	return f.send(req)
}

// TestOpenAPIRequestExamples sends every request body example of the
// OpenAPI document, as written (the example client's id, secret and a real
// token in place of the placeholders), and checks the server accepts it
// with the answer the example promises.
func TestOpenAPIRequestExamples(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	if _, err := s.store.CreateOrg(ctx, clients.OrgSpec{Slug: "sandbox-simulation", Name: clients.SandboxOrgName, Environment: clients.EnvironmentSandbox}); err != nil {
		t.Fatal(err)
	}
	f := &docsFixture{t: t, s: s}
	f.id, f.secret = f.fresh()
	keyed := f.generatedKeyClient()
	resp, err := http.Get(s.url + "/api/v1/schema/?format=json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var d struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Example  map[string]string `json:"example"`
					Examples map[string]struct {
						Value map[string]string `json:"value"`
					} `json:"examples"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	sent := 0
	for path, ops := range d.Paths {
		for method, op := range ops {
			for ct, c := range op.RequestBody.Content {
				examples := map[string]map[string]string{}
				if c.Example != nil {
					examples[""] = c.Example
				}
				for name, ex := range c.Examples {
					examples[name] = ex.Value
				}
				for name, ex := range examples {
					params := map[string]string{}
					for k, v := range ex {
						switch v {
						case "svc_xxxxxxxx":
							v = f.id
						case "svc_cs_xxxxxxxx":
							v = f.secret
						case "svc_at_xxxxxxxx":
							v = f.token(f.id, f.secret)
						case assertionPlaceholder:
							v = keyed.assertion(t, issuer)
						}
						params[k] = v
					}
					var body string
					if ct == "application/json" {
						b, _ := json.Marshal(params)
						body = string(b)
					} else {
						form := url.Values{}
						for k, v := range params {
							form.Set(k, v)
						}
						body = form.Encode()
					}
					var mods []func(*http.Request)
					_, withSecret := params["client_secret"]
					_, withAssertion := params["client_assertion"]
					if !withSecret && !withAssertion {
						mods = append(mods, basicAuth(f.id, f.secret))
					}
					r := f.request(strings.ToUpper(method), path, ct, body, mods...)
					sent++
					var got map[string]any
					_ = json.Unmarshal(r.Body, &got)
					want := "programme.metrics.read events.subscribe"
					if sc, ok := params["scope"]; ok {
						want = sc
					}
					ok := r.Status == 200
					switch path {
					case tokenPath:
						ok = ok && got["scope"] == want && got["token_type"] == "Bearer"
					case revokePath: // RFC 7009 section 2.2: 200, no body
						ok = ok && len(r.Body) == 0
					default:
						ok = ok && got["active"] == true
					}
					if !ok {
						t.Errorf("%s %s %s example %q: %d %s", method, path, ct, name, r.Status, r.Body)
					}
				}
			}
		}
	}
	if sent < 8 {
		t.Fatalf("%d request examples sent, want the 8 of the document", sent)
	}
}
