package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

// TestDocsBaseURL: {base_url} in the documents is the configured public
// base URL, else the address the request was sent to, as a trusted proxy
// forwarded it; a forged or malformed address is never written into them.
func TestDocsBaseURL(t *testing.T) {
	f := newFixture(t)
	trust, err := clientip.ParseTrust("192.0.2.1/32")
	if err != nil {
		t.Fatal(err)
	}
	cfg := f.config()
	cfg.Trust = trust
	s := f.newServer(nil, cfg, f.deps())
	tests := []struct {
		name, remote, host, fwdHost, fwdProto, want string
	}{
		{"Host header", "198.51.100.7:1234", "api.partner.test:8443", "", "", "http://api.partner.test:8443"},
		{"trusted proxy", "192.0.2.1:1234", "backend:8081", "api.partner.test", "https", "https://api.partner.test"},
		{"untrusted forwarded headers", "198.51.100.7:1234", "backend:8081", "evil.test", "https", "http://backend:8081"},
		{"malformed forwarded host", "192.0.2.1:1234", "backend:8081", "evil.test/'x", "https", apidocs.BaseURLPlaceholder},
		{"forwarded proto other than http(s)", "192.0.2.1:1234", "backend:8081", "", "javascript", "http://backend:8081"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/docs/quickstart.md", nil)
			req.RemoteAddr, req.Host = tt.remote, tt.host
			if tt.fwdHost != "" {
				req.Header.Set("X-Forwarded-Host", tt.fwdHost)
			}
			if tt.fwdProto != "" {
				req.Header.Set("X-Forwarded-Proto", tt.fwdProto)
			}
			rec := serve(s.handler, req)
			body := rec.Body.String()
			if !strings.Contains(body, "export BASE_URL='"+tt.want+"'") || rec.Header().Get("Vary") != "X-Forwarded-Host, X-Forwarded-Proto" {
				t.Errorf("base URL not %q (Vary %q):\n%.600s", tt.want, rec.Header().Get("Vary"), body)
			}
		})
	}
	// A configured base URL is written in once: no Vary.
	docs, err := apidocs.New("https://partners.example.org/")
	if err != nil {
		t.Fatal(err)
	}
	deps := f.deps()
	deps.Docs = docs
	fixed := f.newServer(nil, f.config(), deps)
	for _, path := range []string{"/docs/quickstart.md", "/llms-full.txt", "/llms.txt", "/api/v1/schema/"} {
		rec := serve(fixed.handler, httptest.NewRequest(http.MethodGet, path, nil))
		if b := rec.Body.String(); strings.Contains(b, apidocs.BaseURLPlaceholder) || rec.Header().Get("Vary") != "" {
			t.Errorf("%s: placeholder left or Vary %q", path, rec.Header().Get("Vary"))
		}
	}
	if b := serve(fixed.handler, httptest.NewRequest(http.MethodGet, "/llms.txt", nil)).Body.String(); !strings.Contains(b, "https://partners.example.org/docs/quickstart.md") {
		t.Errorf("llms.txt links are not absolute:\n%s", b)
	}
}

func TestDocs(t *testing.T) {
	f := newFixture(t)
	s := f.server()
	quickstart, ok := f.docs.Page("quickstart")
	if !ok {
		t.Fatal("apidocs has no quickstart page")
	}
	tests := []struct {
		path        string
		contentType string
		body        []byte
	}{
		{"/api/v1/schema/?format=json", "application/json; charset=utf-8", f.docs.OpenAPIJSON()},
		{"/api/v1/schema/", "application/json; charset=utf-8", f.docs.OpenAPIJSON()},
		{"/llms.txt", "text/plain; charset=utf-8", f.docs.LLMsTxt()},
		{"/llms-full.txt", "text/plain; charset=utf-8", f.docs.LLMsFullTxt()},
		{"/docs/quickstart.md", "text/markdown; charset=utf-8", quickstart},
	}
	etagRE := regexp.MustCompile(`^"[A-Za-z0-9_-]{22}"$`)
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			rec := serve(s.handler, req)
			// No --base-url: {base_url} is the address the request was sent to.
			want := apidocs.ReplaceBaseURL(tt.body, "http://example.com")
			if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) {
				t.Fatalf("%d, body of %d bytes, want %d", rec.Code, rec.Body.Len(), len(want))
			}
			wantHeader(t, rec, map[string]string{
				"Content-Type":    tt.contentType,
				"Cache-Control":   "public, max-age=300",
				"RateLimit-Limit": "",
			})
			etag := rec.Header().Get("ETag")
			if !etagRE.MatchString(etag) {
				t.Errorf("ETag %q", etag)
			}
			f.validate(req, rec)

			// Revalidation (RFC 9110 section 13.1.2).
			for _, inm := range []string{etag, `"other", ` + etag, "W/" + etag, "*"} {
				req := httptest.NewRequest(http.MethodGet, tt.path, nil)
				req.Header.Set("If-None-Match", inm)
				rec := serve(s.handler, req)
				if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag {
					t.Errorf("If-None-Match %s: %d, %d bytes, ETag %q", inm, rec.Code, rec.Body.Len(), rec.Header().Get("ETag"))
				}
			}
			req = httptest.NewRequest(http.MethodGet, tt.path, nil)
			req.Header.Set("If-None-Match", `"stale"`)
			if rec := serve(s.handler, req); rec.Code != http.StatusOK {
				t.Errorf("stale If-None-Match: %d", rec.Code)
			}
		})
	}

	// Every page listed by apidocs is served.
	for _, p := range f.docs.Pages() {
		req := httptest.NewRequest(http.MethodGet, "/docs/"+p.Name+".md", nil)
		rec := serve(s.handler, req)
		want, _ := f.docs.Page(p.Name)
		want = apidocs.ReplaceBaseURL(want, "http://example.com")
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) {
			t.Errorf("/docs/%s.md: %d", p.Name, rec.Code)
		}
		f.validate(req, rec)
	}

	// The document is JSON and OpenAPI 3.
	var doc map[string]any
	if err := json.Unmarshal(serve(s.handler, httptest.NewRequest(http.MethodGet, "/api/v1/schema/", nil)).Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if v, _ := doc["openapi"].(string); len(v) < 2 || v[:2] != "3." {
		t.Errorf("openapi %v", doc["openapi"])
	}
}

func TestDocsErrors(t *testing.T) {
	f := newFixture(t)
	s := f.server()
	tests := []struct {
		path   string
		status int
		detail string
	}{
		{"/api/v1/schema/?format=yaml", 400, "unsupported format; use format=json"},
		{"/api/v1/schema/?format=", 400, "unsupported format; use format=json"},
		{"/api/v1/schema/?format=json&format=yaml", 400, "unsupported format; use format=json"},
		{"/docs/nope.md", 404, "not found"},
		{"/docs/quickstart", 404, "not found"},
		{"/docs/quickstart.txt", 404, "not found"},
		{"/docs/../llms.txt", 404, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			rec := serve(s.handler, req)
			wantJSON(t, rec, tt.status, map[string]any{"detail": tt.detail})
			if tt.path == "/api/v1/schema/?format=yaml" || tt.path == "/docs/nope.md" {
				f.validate(req, rec)
			}
		})
	}
}
