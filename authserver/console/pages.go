package console

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// route is one console page or action.
type route struct {
	pattern string
	handler http.Handler
}

// routes lists every page of the console. A page's actions are POSTs to
// its own path, told apart by the form's "action", so that the answer to
// an action is the page itself, at its own URL.
func (c *Console) routes() []route {
	return []route{
		{"GET " + Prefix + "{$}", http.HandlerFunc(c.handleHome)},
		{"GET " + Prefix + "signin", http.HandlerFunc(c.handleSignInPage)},
		{"POST " + Prefix + "signin", http.HandlerFunc(c.handleSignIn)},
		{"POST " + Prefix + "signout", http.HandlerFunc(c.handleSignOut)},
		{"GET " + Prefix + "orgs", c.page(c.orgsPage)},
		{"POST " + Prefix + "orgs", c.action(c.orgsAction)},
		{"GET " + Prefix + "orgs/{slug}", c.page(c.orgPage)},
		{"POST " + Prefix + "orgs/{slug}", c.action(c.orgAction)},
		{"GET " + Prefix + "orgs/{slug}/audit", c.page(c.orgAuditPage)},
		{"GET " + Prefix + "clients/{id}", c.page(c.clientPage)},
		{"POST " + Prefix + "clients/{id}", c.action(c.clientAction)},
		{"GET " + Prefix + "clients/{id}/audit", c.page(c.clientAuditPage)},
		{"GET " + Prefix + "keys", c.page(c.keysPage)},
		{"GET " + Prefix + "keys/{kid}/withdraw", c.page(c.withdrawPage)},
		{"POST " + Prefix + "keys/{kid}/withdraw", c.action(c.withdrawAction)},
		{"GET " + Prefix + "audit", c.page(c.auditPage)},
		{"GET " + Prefix + "sandbox", c.page(c.sandboxPage)},
		{"POST " + Prefix + "sandbox", c.action(c.sandboxAction)},
	}
}

// pageFunc serves one page of a signed-in operator.
type pageFunc func(w http.ResponseWriter, r *http.Request, s *session)

// page admits a GET: a session whose token verifies, or the sign-in page.
func (c *Console) page(f pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := c.sessionOf(r)
		if err != nil {
			c.ended(w, r)
			return
		}
		f(w, r, s)
	})
}

// action admits a POST: a session, the console's own origin, the
// session's CSRF token and the form's key, which becomes the write's
// Idempotency-Key (idempotencyKey). The admin API then admits the operator
// and checks its scope, as for any call.
func (c *Console) action(f pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := c.sessionOf(r)
		if err != nil {
			c.ended(w, r)
			return
		}
		if err := r.ParseForm(); err != nil {
			c.fail(w, r, s, http.StatusBadRequest, "Bad request", "The form could not be read.")
			return
		}
		if !checkPost(r, s) {
			c.fail(w, r, s, http.StatusForbidden, "Refused", "This form's CSRF token is missing or wrong, or it was sent from another site. Reload the page and try again.")
			return
		}
		k := r.PostFormValue("idem")
		if !formKey.MatchString(k) {
			c.fail(w, r, s, http.StatusBadRequest, "Bad request", "This form's key (its Idempotency-Key) is missing or malformed. Reload the page and try again.")
			return
		}
		s.idem = idempotencyKey(s.token, k)
		f(w, r, s)
	})
}

// ended answers a request whose session is gone: the cookie is cleared and
// the operator is asked to sign in again.
func (c *Console) ended(w http.ResponseWriter, r *http.Request) {
	c.clearSession(w, r)
	c.render(w, r, http.StatusUnauthorized, "signin", view{Title: "Sign in",
		Notice: "Your session has ended (it expired, you signed out, or the operator client was revoked or rotated). Sign in again."})
}

// refused answers an admin API refusal that ends the page: 401 ends the
// session, 403 is a refused write, 429 and 5xx say when to come back. It
// returns false for the answers the page shows itself (2xx, 400, 404,
// 409, 422).
func (c *Console) refused(w http.ResponseWriter, r *http.Request, s *session, a answer) bool {
	p := a.problem()
	switch {
	case a.ok():
		return false
	case a.Status == http.StatusUnauthorized:
		c.ended(w, r)
	case a.Status == http.StatusForbidden:
		c.fail(w, r, s, http.StatusForbidden, "Forbidden", "The admin API refused this: "+p.Detail+". An operator with admin.read only can read, not change.")
	case a.Status == http.StatusTooManyRequests:
		c.fail(w, r, s, http.StatusTooManyRequests, "Too many requests", p.Detail+" (Retry-After: "+a.Header.Get("Retry-After")+" s).")
	case a.Status >= 500:
		c.fail(w, r, s, http.StatusServiceUnavailable, "Unavailable", "The admin API could not answer: "+p.Detail+". Try again in a few seconds.")
	default:
		return false
	}
	return true
}

// replayed adds to a write's notice that its answer is the first one,
// replayed for the form's Idempotency-Key (the form was sent before).
func replayed(a answer, notice string) string {
	if a.Header.Get("Idempotent-Replayed") != "true" {
		return notice
	}
	return notice + " (This form was sent before: this is its first answer again; nothing was changed a second time.)"
}

// warning is the "warning" member of a 202 answer: a change the replicas
// did not confirm, with what they said.
func warning(a answer) string {
	if a.Status != http.StatusAccepted {
		return ""
	}
	var v struct {
		Warning string `json:"warning"`
	}
	_ = a.decode(&v)
	if v.Warning == "" {
		return "the replicas did not confirm this change"
	}
	return v.Warning
}

func (c *Console) handleHome(w http.ResponseWriter, r *http.Request) {
	if _, err := c.sessionOf(r); err != nil {
		http.Redirect(w, r, Prefix+"signin", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"orgs", http.StatusSeeOther)
}

func (c *Console) handleSignInPage(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, "signin", view{Title: "Sign in"})
}

// tokenAnswer is the token endpoint's success (RFC 6749 section 5.1).
type tokenAnswer struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int    `json:"expires_in"`
	Scope       string `json:"scope"`
}

// handleSignIn exchanges an operator client's id and secret for an
// ordinary operator token at the token endpoint (RFC 6749 section 4.4),
// in process and from the caller's own address, so a wrong secret is
// counted by the token endpoint's failure budget like any other. The
// token becomes the session cookie; the secret is kept nowhere.
func (c *Console) handleSignIn(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || !sameOrigin(r) {
		c.fail(w, r, nil, http.StatusForbidden, "Refused", "The sign-in form must be sent from the console itself.")
		return
	}
	id, secret := strings.TrimSpace(r.PostFormValue("client_id")), strings.TrimSpace(r.PostFormValue("client_secret"))
	again := func(status int, msg string) {
		c.render(w, r, status, "signin", view{Title: "Sign in", Error: msg, Data: id})
	}
	if id == "" || secret == "" {
		again(http.StatusBadRequest, "Enter the operator client's id and secret.")
		return
	}
	// RFC 6749 section 2.3.1: both form-urlencoded inside Basic.
	form := url.Values{"grant_type": {"client_credentials"}}.Encode()
	a := inProcess(c.deps.Token, r, http.MethodPost, "/api/v1/oauth/token/", http.Header{
		"Content-Type":  {"application/x-www-form-urlencoded"},
		"Authorization": {basic(url.QueryEscape(id), url.QueryEscape(secret))},
	}, []byte(form))
	switch {
	case a.Status == http.StatusOK:
	case a.Status == http.StatusUnauthorized || a.Status == http.StatusBadRequest:
		again(http.StatusUnauthorized, "That client id and secret were not accepted.")
		return
	case a.Status == http.StatusTooManyRequests:
		again(http.StatusTooManyRequests, "Too many failed sign-ins for this client from your address: retry after "+a.Header.Get("Retry-After")+" seconds.")
		return
	default:
		again(http.StatusServiceUnavailable, "The token service could not answer ("+strconv.Itoa(a.Status)+"); try again in a few seconds.")
		return
	}
	var tok tokenAnswer
	if err := json.Unmarshal(a.Body, &tok); err != nil || tok.AccessToken == "" || tok.ExpiresIn <= 0 {
		again(http.StatusServiceUnavailable, "The token service's answer could not be read; try again.")
		return
	}
	if !strings.Contains(" "+tok.Scope+" ", " "+clients.ScopeAdminRead+" ") {
		again(http.StatusForbidden, "This client is not an operator client: only operator clients ('authserver operators create') sign in here.")
		return
	}
	c.setSession(w, r, tok.AccessToken, tok.ExpiresIn)
	http.Redirect(w, r, Prefix+"orgs", http.StatusSeeOther)
}

// handleSignOut ends the session: the cookie is cleared. The token itself
// lives on until it expires, as any token does (the operator's secret is
// what rotation ends).
func (c *Console) handleSignOut(w http.ResponseWriter, r *http.Request) {
	if s, err := c.sessionOf(r); err == nil {
		if r.ParseForm() != nil || !checkPost(r, s) {
			c.fail(w, r, s, http.StatusForbidden, "Refused", "This form's CSRF token is missing or wrong. Reload the page and try again.")
			return
		}
	}
	c.clearSession(w, r)
	c.render(w, r, http.StatusOK, "signin", view{Title: "Sign in", Notice: "You are signed out."})
}

// org and client are the admin API's wire forms as the pages read them.
type org struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	Environment string `json:"environment"`
	CreatedAt   string `json:"created_at"`
}

type orgsData struct {
	Orgs  []org
	Query string
	Form  url.Values
}

func (c *Console) orgsPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showOrgs(w, r, s, http.StatusOK, view{}, nil)
}

// showOrgs renders the organisations, filtered by the search q.
func (c *Console) showOrgs(w http.ResponseWriter, r *http.Request, s *session, status int, v view, form url.Values) {
	a := c.api(r, s, http.MethodGet, "/orgs", nil, "")
	if c.refused(w, r, s, a) {
		return
	}
	var list struct{ Items []org }
	_ = a.decode(&list)
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := orgsData{Query: q, Form: form}
	for _, o := range list.Items {
		if q == "" || strings.Contains(strings.ToLower(o.Slug+" "+o.Name), strings.ToLower(q)) {
			d.Orgs = append(d.Orgs, o)
		}
	}
	v.Title, v.S, v.Data = "Organisations", s, d
	c.render(w, r, status, "orgs", v)
}

func (c *Console) orgsAction(w http.ResponseWriter, r *http.Request, s *session) {
	if r.PostFormValue("action") != "create" {
		c.fail(w, r, s, http.StatusBadRequest, "Bad request", "Unknown action.")
		return
	}
	body := map[string]string{"slug": r.PostFormValue("slug"), "name": r.PostFormValue("name"), "environment": r.PostFormValue("environment")}
	a := c.api(r, s, http.MethodPost, "/orgs", body, s.idem)
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.showOrgs(w, r, s, a.Status, view{Error: a.problem().Detail}, r.PostForm)
		return
	}
	var o org
	_ = a.decode(&o)
	c.showOrgs(w, r, s, http.StatusOK, view{Notice: replayed(a, "Created organisation "+o.Slug+"."), Warning: warning(a)}, nil)
}

// basic is an Authorization: Basic value.
func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}
