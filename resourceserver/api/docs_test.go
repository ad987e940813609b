package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
)

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
			rec := serve(s.engine, req)
			if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), tt.body) {
				t.Fatalf("%d, body of %d bytes, want %d", rec.Code, rec.Body.Len(), len(tt.body))
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
				rec := serve(s.engine, req)
				if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag {
					t.Errorf("If-None-Match %s: %d, %d bytes, ETag %q", inm, rec.Code, rec.Body.Len(), rec.Header().Get("ETag"))
				}
			}
			req = httptest.NewRequest(http.MethodGet, tt.path, nil)
			req.Header.Set("If-None-Match", `"stale"`)
			if rec := serve(s.engine, req); rec.Code != http.StatusOK {
				t.Errorf("stale If-None-Match: %d", rec.Code)
			}
		})
	}

	// Every page listed by apidocs is served.
	for _, p := range f.docs.Pages() {
		req := httptest.NewRequest(http.MethodGet, "/docs/"+p.Name+".md", nil)
		rec := serve(s.engine, req)
		want, _ := f.docs.Page(p.Name)
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), want) {
			t.Errorf("/docs/%s.md: %d", p.Name, rec.Code)
		}
		f.validate(req, rec)
	}

	// The document is JSON and OpenAPI 3.
	var doc map[string]any
	if err := json.Unmarshal(serve(s.engine, httptest.NewRequest(http.MethodGet, "/api/v1/schema/", nil)).Body.Bytes(), &doc); err != nil {
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
			rec := serve(s.engine, req)
			wantJSON(t, rec, tt.status, map[string]any{"detail": tt.detail})
			if tt.path == "/api/v1/schema/?format=yaml" || tt.path == "/docs/nope.md" {
				f.validate(req, rec)
			}
		})
	}
}
