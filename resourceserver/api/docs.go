package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

// Content types of the documentation.
const (
	markdownContentType = "text/markdown; charset=utf-8" // RFC 7763
	textContentType     = "text/plain; charset=utf-8"
)

// docsCacheControl lets shared caches keep documentation for five minutes.
const docsCacheControl = "public, max-age=300"

// document is one immutable documentation answer with its entity tag.
type document struct {
	body        []byte
	contentType string
	etag        string
	// templated: the body still holds apidocs.BaseURLPlaceholder (no
	// --base-url was configured), filled in per request (publicBase).
	templated bool
}

func newDocument(body []byte, contentType string) document {
	return document{
		body:        body,
		contentType: contentType,
		etag:        etagOf(body),
		templated:   bytes.Contains(body, []byte(apidocs.BaseURLPlaceholder)),
	}
}

// etagOf is a strong validator (RFC 9110 section 8.8.3): the content's hash.
func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// docSet is every documentation answer with its entity tag, built once at
// start-up from the embedded documents (rendered at build time: apidocs).
type docSet struct {
	openAPI  document
	llms     document
	llmsFull document
	pages    map[string]document
}

func newDocSet(d *apidocs.Docs) docSet {
	ds := docSet{
		openAPI:  newDocument(d.OpenAPIJSON(), jsonContentType),
		llms:     newDocument(d.LLMsTxt(), textContentType),
		llmsFull: newDocument(d.LLMsFullTxt(), textContentType),
		pages:    map[string]document{},
	}
	for _, p := range d.Pages() {
		body, _ := d.Page(p.Name)
		ds.pages[p.Name] = newDocument(body, markdownContentType)
	}
	return ds
}

// openAPI serves the OpenAPI document: format absent or "json" (the endpoint table
// of README.md: GET /api/v1/schema/?format=json), any other value, or a repeated
// one, is 400.
func (s *server) openAPI(c *gin.Context) {
	if f, ok := c.Request.URL.Query()["format"]; ok && (len(f) != 1 || f[0] != "json") {
		s.fail(c, fmt.Errorf("%w: format=%q", errBadFormat, f))
		return
	}
	s.serveDocument(c, s.docs.openAPI)
}

func (s *server) llmsTxt(c *gin.Context)     { s.serveDocument(c, s.docs.llms) }
func (s *server) llmsFullTxt(c *gin.Context) { s.serveDocument(c, s.docs.llmsFull) }

// docsPage serves /docs/<page>.md, as linked from /llms.txt.
func (s *server) docsPage(c *gin.Context) {
	name, ok := strings.CutSuffix(c.Param("page"), ".md")
	d, found := s.docs.pages[name]
	if !ok || !found {
		s.fail(c, errNotFound)
		return
	}
	s.serveDocument(c, d)
}

// publicBase is the base URL the request was sent to, for documents served
// without a configured one: the scheme and host a trusted proxy forwarded
// (X-Forwarded-Proto, X-Forwarded-Host), else the connection's and the Host
// header's. An address that is not a plain http(s) URL is not used ("").
func (s *server) publicBase(r *http.Request) string {
	base := s.cfg.Trust.BaseURL(r)
	host := base[strings.Index(base, "://")+3:]
	if host == "" || strings.ContainsAny(host, "/?#@") || !apidocs.ValidBaseURL(base) {
		return ""
	}
	return base
}

// serveDocument answers d with its validator and cache lifetime, or 304 Not
// Modified when the client's If-None-Match holds its entity tag (RFC 9110
// section 13.1.2). A templated document gets the request's base URL first.
func (s *server) serveDocument(c *gin.Context, d document) {
	h := c.Writer.Header()
	if d.templated {
		h.Set("Vary", "X-Forwarded-Host, X-Forwarded-Proto")
		if base := s.publicBase(c.Request); base != "" {
			d.body = apidocs.ReplaceBaseURL(d.body, base)
			d.etag = etagOf(d.body)
		}
	}
	h.Set("Cache-Control", docsCacheControl)
	h.Set("ETag", d.etag)
	if etagMatch(c.Request.Header.Values("If-None-Match"), d.etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, d.contentType, d.body)
}

// etagMatch evaluates If-None-Match field values against etag with the weak
// comparison (RFC 9110 sections 8.8.3.2 and 13.1.2): "*" or any listed tag
// whose opaque part equals etag's.
func etagMatch(fields []string, etag string) bool {
	for _, f := range fields {
		for _, tag := range strings.Split(f, ",") {
			tag = strings.TrimSpace(tag)
			if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
				return true
			}
		}
	}
	return false
}
