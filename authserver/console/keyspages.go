package console

import (
	"net/http"
	"net/url"
	"slices"
	"time"
)

// keyRow is one signing key as the keys page shows it.
type keyRow struct {
	KID       string
	Signing   bool
	Published bool
	Withdrawn bool
}

func (c *Console) keyState(w http.ResponseWriter, r *http.Request, s *session) ([]keyRow, bool) {
	a := c.api(r, s, http.MethodGet, "/keys", nil, "")
	if c.refused(w, r, s, a) {
		return nil, false
	}
	if !a.ok() {
		c.fail(w, r, s, a.Status, "Signing keys", a.problem().Detail)
		return nil, false
	}
	var k struct {
		SigningKID string   `json:"signing_kid"`
		Kids       []string `json:"kids"`
		Withdrawn  []string `json:"withdrawn"`
	}
	_ = a.decode(&k)
	var rows []keyRow
	for _, kid := range k.Kids {
		rows = append(rows, keyRow{KID: kid, Signing: kid == k.SigningKID, Published: true, Withdrawn: slices.Contains(k.Withdrawn, kid)})
	}
	for _, kid := range k.Withdrawn {
		if !slices.Contains(k.Kids, kid) {
			rows = append(rows, keyRow{KID: kid, Withdrawn: true})
		}
	}
	return rows, true
}

func (c *Console) keysPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showKeys(w, r, s, view{})
}

func (c *Console) showKeys(w http.ResponseWriter, r *http.Request, s *session, v view) {
	rows, ok := c.keyState(w, r, s)
	if !ok {
		return
	}
	v.Title, v.S, v.Data = "Signing keys", s, rows
	c.render(w, r, http.StatusOK, "keys", v)
}

// withdrawPage asks for confirmation before a withdrawal: every token
// signed with the key is refused everywhere within seconds.
func (c *Console) withdrawPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.render(w, r, http.StatusOK, "withdraw", view{Title: "Withdraw a signing key", S: s, Data: r.PathValue("kid")})
}

func (c *Console) withdrawAction(w http.ResponseWriter, r *http.Request, s *session) {
	kid := r.PathValue("kid")
	if r.PostFormValue("confirm") != kid {
		c.render(w, r, http.StatusBadRequest, "withdraw", view{Title: "Withdraw a signing key", S: s, Data: kid,
			Error: "Type the key id exactly to confirm the withdrawal."})
		return
	}
	a := c.api(r, s, http.MethodPost, path("keys", kid, "withdraw"), nil, s.idem)
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.render(w, r, a.Status, "withdraw", view{Title: "Withdraw a signing key", S: s, Data: kid, Error: a.problem().Detail})
		return
	}
	var res struct {
		Note string `json:"note"`
	}
	_ = a.decode(&res)
	c.showKeys(w, r, s, view{Notice: replayed(a, "Withdrew key "+kid+": "+res.Note), Warning: warning(a)})
}

type adminAuditData struct {
	Operator   string
	NextCursor string
	NextURL    string
	Entries    []struct {
		At        time.Time `json:"at"`
		Operator  string    `json:"operator"`
		RequestID string    `json:"request_id"`
		Address   string    `json:"address"`
		Method    string    `json:"method"`
		Route     string    `json:"route"`
		Path      string    `json:"path"`
		Status    int       `json:"status"`
		Replayed  bool      `json:"replayed"`
	} `json:"items"`
}

// auditPage is the admin audit trail, newest first, filtered by operator
// and paged with the API's own cursors.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, s *session) {
	in := r.URL.Query()
	q := url.Values{"limit": {"50"}}
	for _, k := range []string{"operator", "cursor"} {
		if v := in.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	a := c.api(r, s, http.MethodGet, "/audit?"+q.Encode(), nil, "")
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.fail(w, r, s, a.Status, "Admin audit", a.problem().Detail)
		return
	}
	var d adminAuditData
	var p struct {
		NextCursor string `json:"next_cursor"`
	}
	_ = a.decode(&d)
	_ = a.decode(&p)
	d.Operator = in.Get("operator")
	if p.NextCursor != "" {
		next := url.Values{"cursor": {p.NextCursor}}
		if d.Operator != "" {
			next.Set("operator", d.Operator)
		}
		d.NextURL = Prefix + "audit?" + next.Encode()
	}
	c.render(w, r, http.StatusOK, "audit", view{Title: "Admin audit", S: s, Data: d})
}

func (c *Console) sandboxPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.render(w, r, http.StatusOK, "sandbox", view{Title: "Sandbox", S: s})
}

type seededData struct {
	Organization org      `json:"organization"`
	Clients      []client `json:"clients"`
	Note         string   `json:"note"`
}

// sandboxAction seeds the sandbox: idempotent in the registry too (a
// client that exists already is shown without a secret).
func (c *Console) sandboxAction(w http.ResponseWriter, r *http.Request, s *session) {
	a := c.api(r, s, http.MethodPost, "/sandbox/seed", nil, s.idem)
	if c.refused(w, r, s, a) {
		return
	}
	if !a.ok() {
		c.render(w, r, a.Status, "sandbox", view{Title: "Sandbox", S: s, Error: a.problem().Detail})
		return
	}
	var d seededData
	_ = a.decode(&d)
	c.render(w, r, http.StatusOK, "sandbox", view{Title: "Sandbox", S: s, Notice: replayed(a, "Seeded the sandbox: "+d.Note+"."), Warning: warning(a), Data: d})
}
