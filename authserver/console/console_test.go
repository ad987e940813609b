package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/authserver/console"
	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

const issuer = "https://issuer.test"

// stack is the token service and the admin listener (API and console) of
// one test, over the real Redis.
type stack struct {
	t      *testing.T
	store  *clients.Store
	tokens *httptest.Server
	admin  *httptest.Server
	// clock is the token verifier's: moved on, it expires sessions.
	clock *testclock.Clock
}

func newStack(t *testing.T, tokenConfig ...func(*tokenserver.Config)) *stack {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	key, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := accesstoken.NewKeySet(key)
	if err != nil {
		t.Fatal(err)
	}
	store := clients.NewStore(rdb, prefix, nil)
	authority, err := signingkeys.New(keys, issuer, "partner-api")
	if err != nil {
		t.Fatal(err)
	}
	clk := testclock.New(time.Now())
	verifier := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(authority, issuer, "partner-api", clk.Now), 0, nil)
	log := slog.New(slog.DiscardHandler)
	tcfg := tokenserver.Config{Issuer: issuer, Audience: "partner-api"}
	for _, f := range tokenConfig {
		f(&tcfg)
	}
	tok, err := tokenserver.NewServer(log, tcfg,
		tokenserver.Deps{Registry: store, Keys: authority, Tokens: verifier, Ready: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	ops := &operations.Service{Registry: store, Withdrawals: keywithdrawal.NewStore(rdb, prefix)}
	adm, err := adminapi.NewServer(log, adminapi.Config{KeyPrefix: prefix, PublicBaseURL: "http://admin.test"}, adminapi.Deps{
		Ops: ops, Tokens: verifier, Admit: store, Keys: authority, Redis: rdb,
		Console: func(api http.Handler) (http.Handler, error) {
			return console.New(log, console.Config{}, console.Deps{API: api, Token: tok, Tokens: verifier, Usage: ops})
		}})
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, store: store, tokens: httptest.NewServer(tok), admin: httptest.NewServer(adm), clock: clk}
	t.Cleanup(s.tokens.Close)
	t.Cleanup(s.admin.Close)
	return s
}

// operator makes an operator client and returns its id and secret.
func (s *stack) operator(readOnly bool) (string, string) {
	s.t.Helper()
	c, secret, err := s.store.CreateOperator(s.t.Context(), clients.OperatorSpec{Name: "console test", ReadOnly: readOnly})
	if err != nil {
		s.t.Fatal(err)
	}
	return c.ID, secret
}

// browser is a cookie-keeping HTTP client of the console.
type browser struct {
	s  *stack
	hc *http.Client
}

func (s *stack) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{s: s, hc: &http.Client{Jar: jar}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, header ...string) page {
	b.s.t.Helper()
	req, err := http.NewRequest(method, b.s.admin.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		b.s.t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := b.hc.Do(req)
	if err != nil {
		b.s.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header, string(body)}
}

func (b *browser) get(path string) page { return b.do(http.MethodGet, path, nil) }

// post sends a form with the CSRF token of the page at from.
func (b *browser) post(from, path string, form url.Values) page {
	b.s.t.Helper()
	form.Set("csrf", csrfOf(b.s.t, b.get(from)))
	return b.do(http.MethodPost, path, form)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token on the page: %d\n%s", p.status, p.body)
	}
	return m[1]
}

func (b *browser) signIn(id, secret string) page {
	return b.do(http.MethodPost, "/console/signin", url.Values{"client_id": {id}, "client_secret": {secret}})
}

// TestSignIn: the operator's token becomes the session cookie, with its
// attributes; every page carries the security headers.
func TestSignIn(t *testing.T) {
	s := newStack(t)
	id, secret := s.operator(false)
	b := s.browser()
	req, _ := http.NewRequest(http.MethodPost, s.admin.URL+"/console/signin", strings.NewReader(url.Values{"client_id": {id}, "client_secret": {secret}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cookie := res.Header.Get("Set-Cookie")
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(cookie, console.CookieName+"=") {
		t.Fatalf("sign-in: %d %q", res.StatusCode, cookie)
	}
	for _, attr := range []string{"Path=/console/", "HttpOnly", "SameSite=Strict", "Max-Age="} {
		if !strings.Contains(cookie, attr) {
			t.Errorf("cookie %q lacks %s", cookie, attr)
		}
	}
	if strings.Contains(cookie, "Secure") {
		t.Errorf("cookie %q is Secure over plain http", cookie)
	}
	if p := b.signIn(id, secret); p.status != http.StatusOK || !strings.Contains(p.body, "<h1>Organisations</h1>") {
		t.Fatalf("after sign-in: %d\n%s", p.status, p.body)
	}
	p := b.get("/console/orgs")
	for name, want := range map[string]string{
		"X-Frame-Options": "DENY", "Cache-Control": "no-store",
		"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
	} {
		if got := p.header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if strings.Contains(p.body, secret) {
		t.Error("a page shows the operator's secret")
	}
}

// TestSignInRefused: a wrong secret is refused with a page, and counted
// by the token endpoint's failure budget (here 3 a minute): once spent,
// the sign-in page says when to retry, and the right secret waits too.
func TestSignInRefused(t *testing.T) {
	s := newStack(t, func(c *tokenserver.Config) { c.FailuresPerMinute = 3 })
	id, _ := s.operator(false)
	b := s.browser()
	p := b.signIn(id, "svc_cs_wrong")
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "were not accepted") || strings.Contains(p.body, "svc_cs_wrong") {
		t.Fatalf("wrong secret: %d\n%s", p.status, p.body)
	}
	if p := b.get("/console/orgs"); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "Sign in") {
		t.Fatalf("no session: %d\n%s", p.status, p.body)
	}
	// Other operators' secrets: well formed, wrong for this client (a
	// malformed one is refused unchecked, outside the budget).
	for range 3 {
		_, other := s.operator(false)
		if p := b.signIn(id, other); p.status != http.StatusUnauthorized {
			t.Fatalf("wrong secret: %d\n%s", p.status, p.body)
		}
	}
	_, other := s.operator(false)
	if p := b.signIn(id, other); p.status != http.StatusTooManyRequests || !strings.Contains(p.body, "Too many failed sign-ins") {
		t.Fatalf("past the failure budget: %d\n%s", p.status, p.body)
	}
}

// TestDoubleSubmit: a form sent twice at once (a double click) makes one
// client, and both answers show its secret.
func TestDoubleSubmit(t *testing.T) {
	s := newStack(t)
	id, secret := s.operator(false)
	b := s.browser()
	b.signIn(id, secret)
	if _, err := s.store.CreateOrg(t.Context(), clients.OrgSpec{Slug: "twice", Name: "Twice", Environment: "sandbox"}); err != nil {
		t.Fatal(err)
	}
	form := url.Values{"action": {"create-client"}, "name": {"EHR"}, "audience": {"hospital"}, "scope": {"patients.read"},
		"idem": {"double-click-0123456789"}, "csrf": {csrfOf(t, b.get("/console/orgs/twice"))}}
	pages := make(chan page, 2)
	for range 2 {
		go func() { pages <- b.do(http.MethodPost, "/console/orgs/twice", form) }()
	}
	re := regexp.MustCompile(`id="client-secret">(svc_cs_[^<]+)<`)
	first, second := <-pages, <-pages
	a, c := re.FindStringSubmatch(first.body), re.FindStringSubmatch(second.body)
	if a == nil || c == nil || a[1] != c[1] {
		t.Fatalf("double submit: %d %d\n%s\n%s", first.status, second.status, first.body, second.body)
	}
	if list, err := s.store.ListClients(t.Context(), "twice"); err != nil || len(list) != 1 {
		t.Fatalf("clients after a double submit: %d %v", len(list), err)
	}
}

// TestCSRF: a state-changing form without the session's CSRF token, with
// a wrong one, or from another site is refused, and nothing changes.
func TestCSRF(t *testing.T) {
	s := newStack(t)
	id, secret := s.operator(false)
	b := s.browser()
	b.signIn(id, secret)
	form := func() url.Values {
		return url.Values{"action": {"create"}, "slug": {"csrf-org"}, "name": {"CSRF"}, "environment": {"sandbox"}, "idem": {"0123456789abcdef0123"}}
	}
	for name, p := range map[string]page{
		"missing": b.do(http.MethodPost, "/console/orgs", form()),
		"wrong":   b.do(http.MethodPost, "/console/orgs", withCSRF(form(), "AAAA")),
		"cross-site": b.do(http.MethodPost, "/console/orgs", withCSRF(form(), csrfOf(t, b.get("/console/orgs"))),
			"Sec-Fetch-Site", "cross-site"),
	} {
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF") {
			t.Errorf("%s: %d\n%s", name, p.status, p.body)
		}
	}
	if _, err := s.store.GetOrg(t.Context(), "csrf-org"); err == nil {
		t.Fatal("a refused form created the organisation")
	}
}

func withCSRF(v url.Values, token string) url.Values { v.Set("csrf", token); return v }

// TestReadOnly: an admin.read operator sees no write control, and a write
// it forges (with its own valid CSRF token) is refused by the admin API.
func TestReadOnly(t *testing.T) {
	s := newStack(t)
	id, secret := s.operator(true)
	b := s.browser()
	b.signIn(id, secret)
	p := b.get("/console/orgs")
	if p.status != http.StatusOK || strings.Contains(p.body, `method="post" action="/console/orgs"`) || !strings.Contains(p.body, "(read only)") {
		t.Fatalf("read-only orgs page: %d\n%s", p.status, p.body)
	}
	p = b.post("/console/orgs", "/console/orgs", url.Values{"action": {"create"}, "slug": {"forged"}, "name": {"F"}, "environment": {"sandbox"}, "idem": {"0123456789abcdef0123"}})
	if p.status != http.StatusForbidden || !strings.Contains(p.body, "admin.write") {
		t.Fatalf("forged write: %d\n%s", p.status, p.body)
	}
	if _, err := s.store.GetOrg(t.Context(), "forged"); err == nil {
		t.Fatal("a forged write created the organisation")
	}
}

// TestClientLifecycle: create an organisation with a hostile name, a
// client whose secret is shown once (a resubmitted form replays it rather
// than making a second client), rotate (the old secret dies), and an
// operator revoked meanwhile is signed out at its next click.
func TestClientLifecycle(t *testing.T) {
	s := newStack(t)
	id, secret := s.operator(false)
	b := s.browser()
	b.signIn(id, secret)
	hostile := "<img src=x onerror=alert(1)>"
	p := b.post("/console/orgs", "/console/orgs", url.Values{"action": {"create"}, "slug": {"acme"}, "name": {hostile}, "environment": {"sandbox"}, "idem": {"org-key-0123456789"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "Created organisation acme") {
		t.Fatalf("create org: %d\n%s", p.status, p.body)
	}
	p = b.get("/console/orgs/acme")
	if strings.Contains(p.body, "<img src=x") || !strings.Contains(p.body, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Fatalf("hostile name not inert:\n%s", p.body)
	}
	// The registry refuses bidi controls in names; what else echoes
	// them (a search) shows them as escapes.
	p = b.get("/console/orgs?q=" + url.QueryEscape("\u202eevil"))
	if strings.Contains(p.body, "\u202e") || !strings.Contains(p.body, `\u202Eevil`) {
		t.Fatalf("bidi control not inert:\n%s", p.body)
	}
	create := url.Values{"action": {"create-client"}, "name": {"Ward 7"}, "audience": {"hospital"}, "scope": {"patients.read"}, "auth_method": {"client_secret"}, "idem": {"client-key-0123456789"}}
	p = b.post("/console/orgs/acme", "/console/orgs/acme", create)
	again := b.post("/console/orgs/acme", "/console/orgs/acme", create)
	m := regexp.MustCompile(`id="client-secret">(svc_cs_[^<]+)<`).FindStringSubmatch(p.body)
	if p.status != http.StatusOK || m == nil || !strings.Contains(p.body, "will not be shown again") {
		t.Fatalf("create client: %d\n%s", p.status, p.body)
	}
	if again.status != http.StatusOK || !strings.Contains(again.body, m[1]) {
		t.Fatalf("resubmitted form: %d\n%s", again.status, again.body)
	}
	list, err := s.store.ListClients(t.Context(), "acme")
	if err != nil || len(list) != 1 {
		t.Fatalf("clients of acme after a resubmitted form: %d %v", len(list), err)
	}
	cid := list[0].ID
	if st := s.tokenStatus(cid, m[1]); st != http.StatusOK {
		t.Fatalf("token with the shown secret: %d", st)
	}
	p = b.get("/console/clients/" + cid)
	if strings.Contains(p.body, m[1]) || !strings.Contains(p.body, "Rotate the secret") {
		t.Fatalf("client page shows the secret or no rotation:\n%s", p.body)
	}
	// The picture reads the limiter's windows: no API call yet, one token.
	use := regexp.MustCompile(`(\d+) of (\d+) in the last minute`).FindAllStringSubmatch(p.body, -1)
	if len(use) != 2 || use[0][1] != "0" || use[1][1] != "1" {
		t.Fatalf("use now: %v\n%s", use, p.body)
	}
	// The hour reads the minutes the token service samples (here once, by
	// hand): the token request in this minute, on the client's page and
	// in its organisation's list.
	if took, err := s.store.RecordUsage(t.Context(), time.Now()); err != nil || !took {
		t.Fatalf("record usage: %v %v", took, err)
	}
	hour := regexp.MustCompile(`aria-label="1 requests in the last hour, at most 1 in a minute"`)
	if p = b.get("/console/clients/" + cid); !hour.MatchString(p.body) || !strings.Contains(p.body, "1 in the last hour") {
		t.Fatalf("client page without the hour:\n%s", p.body)
	}
	if p = b.get("/console/orgs/acme"); !hour.MatchString(p.body) {
		t.Fatalf("organisation page without the hour:\n%s", p.body)
	}
	p = b.post("/console/clients/"+cid, "/console/clients/"+cid, url.Values{"action": {"rotate"}, "idem": {"rotate-key-0123456789"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "Rotated the secret") {
		t.Fatalf("rotate: %d\n%s", p.status, p.body)
	}
	if st := s.tokenStatus(cid, m[1]); st != http.StatusUnauthorized {
		t.Fatalf("token with the rotated-out secret: %d", st)
	}
	if _, err := s.store.Revoke(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/console/orgs"); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "Your session has ended") {
		t.Fatalf("revoked operator's next click: %d\n%s", p.status, p.body)
	}
}

// tokenStatus asks the token endpoint for a token with id and secret.
func (s *stack) tokenStatus(id, secret string) int {
	req, _ := http.NewRequest(http.MethodPost, s.tokens.URL+tokenserver.PathToken, strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestSessionExpires: once the token has expired, the next click shows the
// sign-in page with a note (401), never an error, and clears the cookie.
func TestSessionExpires(t *testing.T) {
	s := newStack(t)
	id, secret := s.operator(false)
	b := s.browser()
	if p := b.signIn(id, secret); p.status != http.StatusOK {
		t.Fatalf("sign in: %d", p.status)
	}
	s.clock.Add(2 * time.Hour)
	p := b.get("/console/orgs")
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "Your session has ended") || !strings.Contains(p.header.Get("Set-Cookie"), "Max-Age=0") {
		t.Fatalf("expired session: %d %q\n%s", p.status, p.header.Get("Set-Cookie"), p.body)
	}
}

// TestFormKey: a write form without its key is refused and changes
// nothing; the key is bound to the session, so the same form key sent
// by another session of the same operator is another Idempotency-Key (a
// second change), while sent again in its own session it replays.
func TestFormKey(t *testing.T) {
	s := newStack(t)
	id, secret := s.operator(false)
	if _, err := s.store.CreateOrg(t.Context(), clients.OrgSpec{Slug: "keyed", Name: "Keyed", Environment: "sandbox"}); err != nil {
		t.Fatal(err)
	}
	one, two := s.browser(), s.browser()
	one.signIn(id, secret)
	s.clock.Add(time.Second) // another token, so another session
	two.signIn(id, secret)
	form := func(b *browser, key string) url.Values {
		v := url.Values{"action": {"create-client"}, "name": {"EHR"}, "audience": {"hospital"}, "scope": {"patients.read"},
			"csrf": {csrfOf(t, b.get("/console/orgs/keyed"))}}
		if key != "" {
			v.Set("idem", key)
		}
		return v
	}
	for _, key := range []string{"", "short", "not a key <b>0123456789"} {
		if p := one.do(http.MethodPost, "/console/orgs/keyed", form(one, key)); p.status != http.StatusBadRequest || !strings.Contains(p.body, "Idempotency-Key") {
			t.Fatalf("form key %q: %d\n%s", key, p.status, p.body)
		}
	}
	if list, _ := s.store.ListClients(t.Context(), "keyed"); len(list) != 0 {
		t.Fatalf("%d clients after refused forms", len(list))
	}
	const key = "same-form-key-0123456789"
	a := one.do(http.MethodPost, "/console/orgs/keyed", form(one, key))
	again := one.do(http.MethodPost, "/console/orgs/keyed", form(one, key))
	other := two.do(http.MethodPost, "/console/orgs/keyed", form(two, key))
	re := regexp.MustCompile(`id="client-secret">(svc_cs_[^<]+)<`)
	sa, sg, so := re.FindStringSubmatch(a.body), re.FindStringSubmatch(again.body), re.FindStringSubmatch(other.body)
	if sa == nil || sg == nil || so == nil || sa[1] != sg[1] || sa[1] == so[1] {
		t.Fatalf("one key in two sessions: %d %d %d\n%s\n%s\n%s", a.status, again.status, other.status, a.body, again.body, other.body)
	}
	if !strings.Contains(again.body, "This form was sent before") || strings.Contains(a.body, "This form was sent before") {
		t.Fatalf("the replay is not marked (or the first answer is):\n%s\n%s", a.body, again.body)
	}
	if list, _ := s.store.ListClients(t.Context(), "keyed"); len(list) != 2 {
		t.Fatalf("%d clients, want 2 (one per session)", len(list))
	}
}
