//go:build unix

package console

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// hostile is an organisation name that would run a script if the console
// did not render it inert. (The registry refuses bidi controls in names;
// a search echoes them, below.)
const hostile = "<img src=x onerror=alert(1)>"

// TestConsole drives the console in chromium, as an operator would: sign
// in; create an organisation and a client, the form resubmitted making
// one client; read the secret from the page and get a token with it
// (curl), /me 200; rotate, and that token answers
// 401 at once; add and retire a second secret; revoke; the client's audit
// trail in pages, filtered by operator; the CSRF token is required; sign
// out. A read-only operator sees no write control and a
// write it forges is refused. On a token service whose writes no replica
// confirms, a change shows the admin API's 202 as a warning with its
// figures. Every page passes axe-core and the keyboard
// walk, and is saved as a screenshot.
func TestConsole(t *testing.T) {
	s := startStack(t)
	b := newBrowser(t)
	writer, writerSecret := s.operator(t, false)
	reader, readerSecret := s.operator(t, true)

	tb := b.tab(t)
	if st := tb.open(s.console); st != http.StatusOK || !strings.Contains(tb.text("h1"), "Sign in") {
		t.Fatalf("console home: %d %q", st, tb.text("h1"))
	}
	tb.screenshot("signin")
	tb.accessible(b, "sign-in page")
	signIn(t, tb, writer, writerSecret)
	wantSessionCookie(t, tb, s.console)

	// An organisation with a hostile name: shown as text, no dialog.
	tb.typeInto("#slug", "e2e-acme")
	tb.typeInto("#name", hostile)
	if st := tb.submit(`//button[text()="Create organisation"]`); st != http.StatusOK || !strings.Contains(tb.body(), "Created organisation e2e-acme") {
		t.Fatalf("create organisation: %d\n%s", st, tb.body())
	}
	tb.screenshot("organisations")
	tb.accessible(b, "organisations page")
	tb.open(s.console + "orgs/e2e-acme")
	imgs := value(tb, chromedp.Evaluate[int](`document.querySelectorAll("main img").length`))
	if name := tb.text(".facts dd:nth-of-type(2)"); name != hostile || imgs != 0 {
		t.Fatalf("hostile name rendered as %q with %d images", name, imgs)
	}
	tb.open(s.console + "orgs?q=%E2%80%AEevil")
	if caption := tb.text("caption"); caption != `Organisations matching “\u202Eevil”` {
		t.Fatalf("a bidi control in a search shown as %q", caption)
	}
	tb.open(s.console + "orgs/e2e-acme")

	// A client: its secret read from the page, a token with it by curl.
	tb.typeInto("#name", "Ward <b>7</b>")
	tb.run(chromedp.SetValue(chromedp.CSS("#audience"), "hospital"), chromedp.Click(chromedp.CSS(`input[name=scope][value="patients.read"]`)))
	if st := tb.submit(`//button[text()="Create client"]`); st != http.StatusOK {
		t.Fatalf("create client: %d\n%s", st, tb.body())
	}
	if !strings.Contains(tb.body(), "will not be shown again") {
		t.Fatalf("secret page without its warning:\n%s", tb.body())
	}
	tb.screenshot("secret")
	tb.accessible(b, "secret page")
	id, secret := tb.text("#client-id"), tb.text("#client-secret")
	// The form resubmitted (a reload of its answer posts it again, with
	// its key): the first answer again, the same secret, one client.
	if st := tb.navigate(chromedp.Reload()); st != http.StatusOK || tb.text("#client-id") != id || tb.text("#client-secret") != secret ||
		!strings.Contains(tb.body(), "This form was sent before") {
		t.Fatalf("create-client form resubmitted: %d\n%s", st, tb.body())
	}
	if n := strings.Count(string(s.CLI(t, "clients", "list", "--org", "e2e-acme", "--json")), `"client_id"`); n != 1 {
		t.Fatalf("%d clients after a resubmitted create-client form, want 1", n)
	}
	token, st := s.token(t, id, secret)
	if st != http.StatusOK || s.me(t, token) != http.StatusOK {
		t.Fatalf("token with the shown secret: %d, /me %d", st, s.me(t, token))
	}
	tb.open(s.console + "orgs/e2e-acme")
	// The page made two admin API calls; its access record names the
	// operator once.
	recs := s.accessRecords("/console/orgs/e2e-acme")
	if len(recs) == 0 {
		t.Fatal("no access record of the organisation page")
	}
	for _, rec := range recs {
		if strings.Count(rec, `"client_id"`) != 1 || !strings.Contains(rec, `"client_id":"`+writer+`"`) {
			t.Fatalf("access record of the organisation page: %s", rec)
		}
	}
	tb.screenshot("organisation")
	tb.accessible(b, "organisation page")

	// Rotate: the token dies at once.
	client := s.console + "clients/" + id
	tb.open(client)
	if strings.Contains(tb.body(), secret) {
		t.Fatal("the client page shows the secret")
	}
	tb.screenshot("client")
	tb.accessible(b, "client page")
	if st := tb.submit(`//button[text()="Rotate the secret"]`); st != http.StatusOK || !strings.Contains(tb.body(), "Rotated the secret") {
		t.Fatalf("rotate: %d\n%s", st, tb.body())
	}
	if got := s.me(t, token); got != http.StatusUnauthorized {
		t.Fatalf("/me with the rotated-out token: %d, want 401", got)
	}
	rotated := tb.text("#client-secret")

	// A second secret, then the first retired: the second lives on.
	tb.open(client)
	if st := tb.submit(`//button[text()="Add a second secret"]`); st != http.StatusOK {
		t.Fatalf("add a second secret: %d\n%s", st, tb.body())
	}
	second := tb.text("#client-secret")
	oldToken, _ := s.token(t, id, rotated)
	newToken, _ := s.token(t, id, second)
	tb.open(client)
	first := regexp.MustCompile(`Retire secret (\d+)`).FindStringSubmatch(tb.body())
	if first == nil || oldToken == "" || newToken == "" {
		t.Fatalf("two secrets: retire button %v, tokens %q %q\n%s", first, oldToken, newToken, tb.body())
	}
	if st := tb.submit(`//button[text()="` + first[0] + `"]`); st != http.StatusOK || !strings.Contains(tb.body(), "Retired secret") {
		t.Fatalf("retire: %d\n%s", st, tb.body())
	}
	if a, b := s.me(t, oldToken), s.me(t, newToken); a != http.StatusUnauthorized || b != http.StatusOK {
		t.Fatalf("after retiring the first secret: its token %d (want 401), the second's %d (want 200)", a, b)
	}

	// A change by another hand (the CLI) for the trail's operator filter.
	s.CLI(t, "clients", "set-rate-limit", id, "90")

	// A missing or wrong CSRF token is refused.
	for name, js := range map[string]string{
		"missing": revokeCSRF + `.remove()`,
		"wrong":   revokeCSRF + `.value = "forged"`,
	} {
		tb.open(client)
		tb.run(chromedp.Evaluate[chromedp.Void](js))
		if st := tb.submit(`//button[text()="Revoke the client"]`); st != http.StatusForbidden || !strings.Contains(tb.body(), "CSRF") {
			t.Fatalf("%s CSRF token: %d\n%s", name, st, tb.body())
		}
	}

	// Revoke.
	tb.open(client)
	if st := tb.submit(`//button[text()="Revoke the client"]`); st != http.StatusOK || !strings.Contains(tb.body(), "Revoked the client") {
		t.Fatalf("revoke: %d\n%s", st, tb.body())
	}
	if _, st := s.token(t, id, second); st != http.StatusUnauthorized {
		t.Fatalf("token after revocation: %d, want 401", st)
	}

	// The client's trail, paged with the API's cursors (4 a page here)
	// and filtered by operator: created, rotated, added, retired (the
	// console's operator), the limit (the CLI), revoked.
	rows := func() []string {
		return value(tb, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("main tbody tr")).map(r => r.innerText)`))
	}
	newer := func() int {
		return value(tb, chromedp.Evaluate[int](`document.querySelectorAll("main a[href*='cursor=']").length`))
	}
	tb.open(client + "/audit?limit=4")
	page1 := rows()
	if len(page1) != 4 || !strings.Contains(page1[0], "created") || newer() != 1 {
		t.Fatalf("the client's trail, first page of 4: %q", page1)
	}
	if st := tb.submit(`//a[text()="Newer entries"]`); st != http.StatusOK {
		t.Fatalf("the trail's next page: %d", st)
	}
	page2 := rows()
	if len(page2) != 2 || !strings.Contains(page2[0], "by cli") || !strings.Contains(page2[1], "operator="+writer) || newer() != 0 {
		t.Fatalf("the client's trail, second page: %q", page2)
	}
	tb.typeInto("#operator", writer)
	if st := tb.submit(`//button[text()="Filter"]`); st != http.StatusOK {
		t.Fatalf("filter the trail: %d", st)
	}
	filtered := rows()
	tb.submit(`//a[text()="Newer entries"]`)
	filtered = append(filtered, rows()...)
	if len(filtered) != 5 || strings.Contains(strings.Join(filtered, "\n"), "by cli") {
		t.Fatalf("the trail of operator %s: %q", writer, filtered)
	}

	for _, p := range []struct{ path, name string }{
		{"clients/" + id + "/audit", "client-audit"}, {"orgs/e2e-acme/audit", "organisation-audit"},
		{"keys", "keys"}, {"audit", "admin-audit"}, {"sandbox", "sandbox"},
	} {
		if st := tb.open(s.console + p.path); st != http.StatusOK {
			t.Fatalf("%s: %d\n%s", p.path, st, tb.body())
		}
		tb.screenshot(p.name)
		tb.accessible(b, p.name+" page")
	}
	if st := tb.submit(`//button[text()="Seed the sandbox"]`); st != http.StatusOK || !strings.Contains(tb.body(), "Seeded the sandbox") {
		t.Fatalf("seed: %d\n%s", st, tb.body())
	}

	// Sign out: the cookie is gone and the pages ask for a sign-in.
	if st := tb.submit(`//button[text()="Sign out"]`); st != http.StatusOK || !strings.Contains(tb.body(), "You are signed out") {
		t.Fatalf("sign out: %d\n%s", st, tb.body())
	}
	if c := tb.cookies(s.console); len(c) != 0 {
		t.Fatalf("cookies after sign-out: %v", c)
	}
	if st := tb.open(s.console + "orgs"); st != http.StatusUnauthorized {
		t.Fatalf("a page after sign-out: %d", st)
	}

	// A read-only operator: no write control; a forged write is refused.
	ro := b.tab(t)
	ro.open(s.console)
	signIn(t, ro, reader, readerSecret)
	for _, path := range []string{"orgs", "orgs/e2e-acme", "clients/" + id, "keys", "sandbox"} {
		ro.open(s.console + path)
		writes := value(ro, chromedp.Evaluate[int](`document.querySelectorAll('form[method=post]:not([action="/console/signout"])').length`))
		if writes != 0 {
			t.Errorf("read-only operator sees %d write forms on %s", writes, path)
		}
	}
	ro.open(s.console + "orgs")
	ro.run(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.createElement("form"); f.method = "post"; f.action = "/console/orgs";
		for (const [k, v] of [["action", "create"], ["slug", "forged"], ["name", "Forged"], ["environment", "sandbox"],
			["idem", "forged-key-0123456789"], ["csrf", document.querySelector("input[name=csrf]").value]]) {
			const i = document.createElement("input"); i.type = "hidden"; i.name = k; i.value = v; f.appendChild(i); }
		const s = document.createElement("button"); s.type = "submit"; s.textContent = "Forge"; f.appendChild(s);
		document.querySelector("main").appendChild(f); })()`))
	if st := ro.submit(`//button[text()="Forge"]`); st != http.StatusForbidden || !strings.Contains(ro.body(), "admin.write") {
		t.Fatalf("forged write of a read-only operator: %d\n%s", st, ro.body())
	}
	ro.screenshot("forbidden")

	// A change the replicas did not confirm (the admin API's 202): the
	// page shows the result in force with a warning and its figures.
	unconfirmed, uid, usecret := s.startUnconfirmed(t)
	uc := b.tab(t)
	uc.open(unconfirmed)
	signIn(t, uc, uid, usecret)
	uc.typeInto("#slug", "e2e-unconfirmed")
	uc.typeInto("#name", "Unconfirmed")
	figures := "confirmed by 0 of the 1 replica(s) required within " + unconfirmedTimeout + "; the primary has only 0 replica(s) connected"
	if st := uc.submit(`//button[text()="Create organisation"]`); st != http.StatusOK || !strings.Contains(uc.body(), "Created organisation e2e-unconfirmed") ||
		!strings.Contains(uc.text(".warning"), "The replicas did not confirm this change.") || !strings.Contains(uc.text(".warning"), figures) {
		t.Fatalf("unconfirmed create organisation: %d\n%s", st, uc.body())
	}
	uc.open(unconfirmed + "orgs/e2e-unconfirmed")
	uc.typeInto("#name", "Unconfirmed client")
	if st := uc.submit(`//button[text()="Create client"]`); st != http.StatusOK || !strings.Contains(uc.text(".warning"), figures) {
		t.Fatalf("unconfirmed create client: %d\n%s", st, uc.body())
	}
	uc.screenshot("unconfirmed")
	uc.accessible(b, "unconfirmed secret page")

	if n := tb.dialogs.Load() + ro.dialogs.Load() + uc.dialogs.Load(); n != 0 {
		t.Fatalf("%d JavaScript dialogs opened", n)
	}
}

// revokeCSRF is the CSRF field of the client page's revoke form.
const revokeCSRF = `document.querySelector('form:has(input[name=action][value=revoke]) input[name=csrf]')`

// signIn fills the sign-in form and lands on the organisations.
func signIn(t *testing.T, tb *tab, id, secret string) {
	t.Helper()
	tb.typeInto("#client_id", id)
	tb.typeInto("#client_secret", secret)
	if st := tb.submit(`//button[text()="Sign in"]`); st != http.StatusOK || tb.text("h1") != "Organisations" {
		t.Fatalf("sign in: %d %q", st, tb.text("h1"))
	}
}

// wantSessionCookie: the session cookie is HttpOnly, SameSite=Strict,
// scoped to /console/, and not Secure over plain http.
func wantSessionCookie(t *testing.T, tb *tab, url string) {
	t.Helper()
	cs := tb.cookies(url)
	if len(cs) != 1 {
		t.Fatalf("cookies: %v", cs)
	}
	c := cs[0]
	if c.Name != "console_session" || !c.HTTPOnly || c.SameSite != "Strict" || c.Path != "/console/" || c.Secure || c.Session {
		t.Fatalf("session cookie: %+v", c)
	}
}
