package console

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"strings"
	"time"
)

// assets are the templates and the static files, embedded in the binary.
//
//go:embed templates/*.html static/*
var assets embed.FS

// bidiControls are the Unicode controls that reorder the text around them
// (Trojan Source, CVE-2021-42574) or hide in it: operator-entered text
// shows them as visible escapes ("\u202E"), never applies them.
var bidiControls = strings.NewReplacer(
	"\u202a", `\u202A`, "\u202b", `\u202B`, "\u202c", `\u202C`, "\u202d", `\u202D`, "\u202e", `\u202E`,
	"\u2066", `\u2066`, "\u2067", `\u2067`, "\u2068", `\u2068`, "\u2069", `\u2069`,
	"\u200e", `\u200E`, "\u200f", `\u200F`, "\u061c", `\u061C`, "\u200b", `\u200B`, "\ufeff", `\uFEFF`,
)

// inert is operator-entered text made safe to show: html/template
// escapes its markup, this its bidi controls.
func inert(s string) string { return bidiControls.Replace(s) }

var funcs = template.FuncMap{
	"inert": inert,
	"idem":  newFormKey,
	"when": func(t any) string {
		switch v := t.(type) {
		case time.Time:
			if v.IsZero() {
				return ""
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		case *time.Time:
			if v == nil || v.IsZero() {
				return "never"
			}
			return v.UTC().Format("2006-01-02 15:04:05Z")
		}
		return ""
	},
	"join": strings.Join,
	"has": func(list []string, s string) bool {
		for _, v := range list {
			if v == s {
				return true
			}
		}
		return false
	},
	"pct": func(n, of int64) int64 {
		if of <= 0 {
			return 0
		}
		if n >= of {
			return 100
		}
		return n * 100 / of
	},
}

// parseTemplates parses every page with the layout: one template set per
// page, each defining "content".
func parseTemplates() (map[string]*template.Template, error) {
	names, err := assets.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, e := range names {
		name := strings.TrimSuffix(e.Name(), ".html")
		if name == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+e.Name())
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}

// view is what every page shows: the operator, what happened, the
// page's own data.
type view struct {
	Title   string
	S       *session
	Notice  string
	Warning string
	Error   string
	Data    any
}

// render writes a page. A template that fails (a bug) is logged and
// answered with a plain error page, never a stack trace.
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, name string, v view) {
	t, ok := c.pages[name]
	if !ok {
		c.log.ErrorContext(r.Context(), "console: no template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		c.log.ErrorContext(r.Context(), "console: render", "name", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// fail answers an error page: a title and what to do, in words.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, status int, title, detail string) {
	c.render(w, r, status, "error", view{Title: title, S: s, Error: detail})
}
