package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// client is a client as the admin API shows it (operations.Client's wire
// form).
type client struct {
	ID                      string       `json:"client_id"`
	Name                    string       `json:"name"`
	Audience                string       `json:"audience"`
	OrgSlug                 string       `json:"organization_slug"`
	OrgName                 string       `json:"organization_name"`
	Environment             string       `json:"environment"`
	Scopes                  []string     `json:"scopes"`
	RateLimitPerMinute      int64        `json:"rate_limit_per_minute"`
	TokenRateLimitPerMinute int64        `json:"token_rate_limit_per_minute"`
	Status                  string       `json:"status"`
	CreatedAt               time.Time    `json:"created_at"`
	RotatedAt               *time.Time   `json:"secret_rotated_at"`
	RevokedAt               *time.Time   `json:"revoked_at"`
	AuthMethod              string       `json:"auth_method"`
	Secrets                 []secretInfo `json:"secrets"`
	JWKSURI                 string       `json:"jwks_uri"`
	DPoPBound               bool         `json:"dpop_bound_access_tokens"`
	// The certificate name of a tls_client_auth client (RFC 8705 section
	// 2.1.2): one of them.
	TLSSubjectDN string `json:"tls_client_auth_subject_dn"`
	TLSSANDNS    string `json:"tls_client_auth_san_dns"`
	TLSSANURI    string `json:"tls_client_auth_san_uri"`
	TLSSANIP     string `json:"tls_client_auth_san_ip"`
	TLSSANEmail  string `json:"tls_client_auth_san_email"`
	// ClientSecret is there in the one answer that shows it.
	ClientSecret string `json:"client_secret"`
	SecretID     int64  `json:"secret_id"`
}

type secretInfo struct {
	ID        int64     `json:"secret_id"`
	CreatedAt time.Time `json:"created_at"`
}

// Active tells the templates whether the client can still be changed.
func (c client) Active() bool { return c.Status != "revoked" }

type orgData struct {
	Org        org
	Clients    []client
	NextCursor string
	Audiences  []string
	Scopes     []string
	Form       url.Values
	Usage      map[string]usageView
}

func path(parts ...string) string {
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return "/" + strings.Join(parts, "/")
}

func (c *Console) orgPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showOrg(w, r, s, http.StatusOK, view{}, nil)
}

func (c *Console) showOrg(w http.ResponseWriter, r *http.Request, s *session, status int, v view, form url.Values) {
	slug := r.PathValue("slug")
	a := c.api(r, s, http.MethodGet, path("orgs", slug), nil, "")
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.fail(w, r, s, a.Status, "Not found", a.problem().Detail)
		return
	}
	d := orgData{Audiences: clients.Audiences, Scopes: clients.AllScopes, Form: form}
	_ = a.decode(&d.Org)
	q := url.Values{"org": {slug}, "limit": {"100"}}
	if cur := r.URL.Query().Get("cursor"); cur != "" {
		q.Set("cursor", cur)
	}
	a = c.api(r, s, http.MethodGet, "/clients?"+q.Encode(), nil, "")
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.fail(w, r, s, a.Status, "Clients", a.problem().Detail)
		return
	}
	var p struct {
		Items      []client `json:"items"`
		NextCursor string   `json:"next_cursor"`
	}
	_ = a.decode(&p)
	d.Clients, d.NextCursor = p.Items, p.NextCursor
	d.Usage = c.usageOf(r, d.Clients)
	v.Title, v.S, v.Data = "Organisation "+d.Org.Slug, s, d
	c.render(w, r, status, "org", v)
}

// orgAction creates a client of the organisation: the secret is shown
// once, on the answer to this form.
func (c *Console) orgAction(w http.ResponseWriter, r *http.Request, s *session) {
	if r.PostFormValue("action") != "create-client" {
		c.fail(w, r, s, http.StatusBadRequest, "Bad request", "Unknown action.")
		return
	}
	f := r.PostForm
	body := map[string]any{"organization_slug": r.PathValue("slug"), "name": f.Get("name"), "audience": f.Get("audience"),
		"scopes": nonNil(f["scope"]), "dpop_bound_access_tokens": f.Get("dpop") == "on"}
	if v := strings.TrimSpace(f.Get("rate_limit")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			c.showOrg(w, r, s, http.StatusBadRequest, view{Error: "The API limit must be a whole number of requests per minute."}, f)
			return
		}
		body["rate_limit_per_minute"] = n
	}
	switch m := f.Get("auth_method"); m {
	case clients.AuthPrivateKeyJWT, clients.AuthSelfSignedTLSClient:
		body["auth_method"] = m
		if err := keysBody(f, body); err != "" {
			c.showOrg(w, r, s, http.StatusBadRequest, view{Error: err}, f)
			return
		}
	case clients.AuthTLSClient:
		body["auth_method"] = m
		subjectBody(f, body)
	}
	a := c.api(r, s, http.MethodPost, "/clients", body, s.idem)
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.showOrg(w, r, s, a.Status, view{Error: a.problem().Detail}, f)
		return
	}
	var cl client
	_ = a.decode(&cl)
	c.showSecret(w, r, s, cl, replayed(a, "Created client "+cl.ID+"."), warning(a))
}

// keysBody puts a JWK set or a jwks_uri from the form into body; it
// returns what is wrong with the form, if anything. The keys themselves
// are the admin API's to check (every problem listed).
func keysBody(f url.Values, body map[string]any) string {
	jwks, uri := strings.TrimSpace(f.Get("jwks")), strings.TrimSpace(f.Get("jwks_uri"))
	switch {
	case jwks != "" && uri != "":
		return "Give either a JWK set or a jwks_uri, not both."
	case jwks != "":
		if !json.Valid([]byte(jwks)) {
			return "The JWK set is not valid JSON."
		}
		body["jwks"] = json.RawMessage(jwks)
	case uri != "":
		body["jwks_uri"] = uri
	default:
		return "A " + f.Get("auth_method") + " client needs its public keys: paste a JWK set or give a jwks_uri."
	}
	return ""
}

// subjectBody puts the form's certificate name (RFC 8705 section 2.1.2:
// its kind, one of clients.SubjectKinds, and its value) into body; the
// admin API checks it, every problem listed.
func subjectBody(f url.Values, body map[string]any) {
	if kind := f.Get("tls_subject_kind"); slices.Contains(clients.SubjectKinds, kind) {
		body[kind] = strings.TrimSpace(f.Get("tls_subject"))
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// showSecret renders the one answer that shows a secret. The page is never
// cached (Cache-Control: no-store) and the secret is in no URL: a reload
// posts the form again with its Idempotency-Key, which replays this same
// answer rather than making a second client or rotation.
func (c *Console) showSecret(w http.ResponseWriter, r *http.Request, s *session, cl client, notice, warn string) {
	c.render(w, r, http.StatusOK, "secret", view{Title: "Client secret", S: s, Notice: notice, Warning: warn, Data: cl})
}

type clientData struct {
	Client client
	Usage  *usageView
}

func (c *Console) clientPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showClient(w, r, s, http.StatusOK, view{})
}

func (c *Console) showClient(w http.ResponseWriter, r *http.Request, s *session, status int, v view) {
	a := c.api(r, s, http.MethodGet, path("clients", r.PathValue("id")), nil, "")
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.fail(w, r, s, a.Status, "Not found", a.problem().Detail)
		return
	}
	var d clientData
	_ = a.decode(&d.Client)
	if u, ok := c.usageOf(r, []client{d.Client})[d.Client.ID]; ok {
		d.Usage = &u
	}
	v.Title, v.S, v.Data = "Client "+d.Client.ID, s, d
	c.render(w, r, status, "client", v)
}

// clientAction runs one of a client's actions, each one admin API call.
func (c *Console) clientAction(w http.ResponseWriter, r *http.Request, s *session) {
	id, f, idem := r.PathValue("id"), r.PostForm, s.idem
	var a answer
	notice := ""
	switch f.Get("action") {
	case "rotate":
		a = c.api(r, s, http.MethodPost, path("clients", id, "rotate-secret"), nil, idem)
		notice = "Rotated the secret: the old secret and every token issued with it stopped working now."
	case "add-secret":
		a = c.api(r, s, http.MethodPost, path("clients", id, "secrets"), nil, idem)
		notice = "Added a second secret. Deploy it, then retire the old one: both work until then."
	case "retire":
		a = c.api(r, s, http.MethodDelete, path("clients", id, "secrets", f.Get("secret_id")), nil, idem)
		notice = "Retired secret " + f.Get("secret_id") + ": its tokens stopped working now."
	case "revoke":
		a = c.api(r, s, http.MethodPost, path("clients", id, "revoke"), nil, idem)
		notice = "Revoked the client: it gets no more tokens and its tokens stopped working."
	case "rate-limit", "token-rate-limit":
		n, err := strconv.ParseInt(strings.TrimSpace(f.Get("limit")), 10, 64)
		if err != nil {
			c.showClient(w, r, s, http.StatusBadRequest, view{Error: "A limit is a whole number of requests per minute."})
			return
		}
		member, route := "rate_limit_per_minute", "rate-limit"
		if f.Get("action") == "token-rate-limit" {
			member, route = "token_rate_limit_per_minute", "token-rate-limit"
		}
		a = c.api(r, s, http.MethodPut, path("clients", id, route), map[string]int64{member: n}, idem)
		notice = "Set the limit to " + strconv.FormatInt(n, 10) + " requests per minute."
	case "dpop":
		bound := f.Get("bound") == "true"
		a = c.api(r, s, http.MethodPut, path("clients", id, "dpop-bound"), map[string]bool{"dpop_bound_access_tokens": bound}, idem)
		notice = "DPoP-bound tokens: " + strconv.FormatBool(bound) + ", from the client's next token request."
	case "keys":
		body := map[string]any{}
		if msg := keysBody(f, body); msg != "" {
			c.showClient(w, r, s, http.StatusBadRequest, view{Error: msg})
			return
		}
		a = c.api(r, s, http.MethodPut, path("clients", id, "keys"), body, idem)
		notice = "Replaced the client's public keys: tokens issued before stopped working."
	case "tls-subject":
		body := map[string]any{}
		subjectBody(f, body)
		a = c.api(r, s, http.MethodPut, path("clients", id, "keys"), body, idem)
		notice = "Changed the client's certificate name: certificates under the old name and tokens issued before stopped working."
	default:
		c.fail(w, r, s, http.StatusBadRequest, "Bad request", "Unknown action.")
		return
	}
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.showClient(w, r, s, a.Status, view{Error: a.problem().Detail})
		return
	}
	var cl client
	_ = a.decode(&cl)
	notice = replayed(a, notice)
	if cl.ClientSecret != "" {
		c.showSecret(w, r, s, cl, notice, warning(a))
		return
	}
	c.showClient(w, r, s, http.StatusOK, view{Notice: notice, Warning: warning(a)})
}

type auditData struct {
	Of   string
	Back string
	// A paged trail (a client's): its own URL, the operator filter, the
	// page size asked for ("" for the default) and the next page's URL.
	Paged    bool
	Self     string
	Operator string
	Limit    string
	NextURL  string
	Entries  []struct {
		ID       string    `json:"id"`
		Event    string    `json:"event"`
		ClientID string    `json:"client_id"`
		At       time.Time `json:"at"`
		Detail   string    `json:"detail"`
	} `json:"items"`
}

func (c *Console) trail(w http.ResponseWriter, r *http.Request, s *session, apiPath string, d auditData) {
	a := c.api(r, s, http.MethodGet, apiPath, nil, "")
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.fail(w, r, s, a.Status, "Audit trail", a.problem().Detail)
		return
	}
	var p struct {
		NextCursor string `json:"next_cursor"`
	}
	_ = a.decode(&d)
	_ = a.decode(&p)
	if d.Paged && p.NextCursor != "" {
		next := url.Values{"cursor": {p.NextCursor}}
		for k, v := range map[string]string{"operator": d.Operator, "limit": d.Limit} {
			if v != "" {
				next.Set(k, v)
			}
		}
		d.NextURL = d.Self + "?" + next.Encode()
	}
	c.render(w, r, http.StatusOK, "trail", view{Title: "Audit trail of " + d.Of, S: s, Data: d})
}

// trailPage is the page size of a client's trail, unless the page's
// limit asks for another (1-500, the admin API's bound).
const trailPage = "50"

// clientAuditPage is a client's trail, oldest first, filtered by operator
// and paged with the admin API's own cursors (as the admin audit is).
func (c *Console) clientAuditPage(w http.ResponseWriter, r *http.Request, s *session) {
	id, in := r.PathValue("id"), r.URL.Query()
	d := auditData{Of: "client " + id, Back: Prefix + "clients/" + url.PathEscape(id), Paged: true,
		Self: Prefix + "clients/" + url.PathEscape(id) + "/audit", Operator: in.Get("operator"), Limit: in.Get("limit")}
	q := url.Values{"limit": {trailPage}}
	for _, k := range []string{"operator", "cursor", "limit"} {
		if v := in.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	c.trail(w, r, s, path("clients", id, "audit")+"?"+q.Encode(), d)
}

func (c *Console) orgAuditPage(w http.ResponseWriter, r *http.Request, s *session) {
	slug := r.PathValue("slug")
	c.trail(w, r, s, path("orgs", slug, "audit"), auditData{Of: "organisation " + slug, Back: Prefix + "orgs/" + url.PathEscape(slug)})
}
