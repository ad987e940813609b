package apidocs

import (
	"bytes"
	"embed"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/partnerapi/authplatform/resourceserver/apidocs/internal/pages"
)

//go:generate go run ./internal/gen

//go:embed openapi.json
var openAPIJSON []byte

//go:embed guides/*.md
var guidesFS embed.FS

// What go generate renders (internal/render; the names are
// internal/pages's): the API reference, and the llms.txt files with links
// relative to the host and with links under BaseURLPlaceholder, for a
// configured base URL.
var (
	//go:embed generated/api-reference.md
	reference []byte
	//go:embed generated/llms.txt
	llmsTxt []byte
	//go:embed generated/llms-full.txt
	llmsFullTxt []byte
	//go:embed generated/with-base-url/llms.txt
	baseURLLLMsTxt []byte
	//go:embed generated/with-base-url/llms-full.txt
	baseURLLLMsFullTxt []byte
)

// PageInfo describes one documentation page.
type PageInfo struct {
	// Name identifies the page in its path /docs/<Name>.md.
	Name string
	// Title is the page's first heading.
	Title string
	// Description is a one-sentence summary, as listed in llms.txt.
	Description string
}

// page is a PageInfo with its Markdown body.
type page struct {
	PageInfo
	body []byte
}

// Docs is the loaded documentation. It is immutable and safe for concurrent
// use.
type Docs struct {
	openAPI  []byte
	pages    []page
	llms     []byte
	llmsFull []byte
}

// New loads the embedded documentation: the OpenAPI document, the guides
// and what go generate rendered from them.
//
// baseURL is the public base address of the API, such as
// "https://api.example.com", used for the links of llms.txt and put in place
// of every BaseURLPlaceholder. Empty means links relative to the host
// ("/docs/quickstart.md") and placeholders left for the server to fill in
// per request.
func New(baseURL string) (*Docs, error) {
	base, err := normalizeBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	ps, err := loadPages()
	if err != nil {
		return nil, err
	}

	d := &Docs{openAPI: openAPIJSON, pages: slices.Clone(ps), llms: llmsTxt, llmsFull: llmsFullTxt}
	if base != "" {
		// Every example and link names the deployment's own address.
		ph, b := []byte(BaseURLPlaceholder), []byte(base)
		d.openAPI = bytes.ReplaceAll(d.openAPI, ph, b)
		d.llms = bytes.ReplaceAll(baseURLLLMsTxt, ph, b)
		d.llmsFull = bytes.ReplaceAll(baseURLLLMsFullTxt, ph, b)
		for i := range d.pages {
			d.pages[i].body = bytes.ReplaceAll(d.pages[i].body, ph, b)
		}
	}
	return d, nil
}

// loadPages reads the pages once per process, with their placeholders:
// nothing changes them after, so every Docs shares them.
var loadPages = sync.OnceValues(func() ([]page, error) {
	guides, err := pages.ReadGuides(guidesFS)
	if err != nil {
		return nil, fmt.Errorf("apidocs: %w", err)
	}
	out := make([]page, 0, len(guides)+1)
	for _, g := range guides {
		out = append(out, page{PageInfo{g.Name, g.Title, g.Description}, g.Body})
	}
	ref := PageInfo{pages.ReferenceName, pages.ReferenceTitle, pages.ReferenceDescription}
	return append(out, page{ref, reference}), nil
})

// BaseURLPlaceholder stands for the deployment's public base address in the
// documents. New replaces it when given a base URL; otherwise the server
// replaces it per request with the address the request was sent to
// (ReplaceBaseURL).
const BaseURLPlaceholder = pages.BaseURLPlaceholder

// ReplaceBaseURL returns body with every BaseURLPlaceholder replaced by
// base, which must have passed ValidBaseURL.
func ReplaceBaseURL(body []byte, base string) []byte {
	return bytes.ReplaceAll(body, []byte(BaseURLPlaceholder), []byte(base))
}

// ValidBaseURL reports whether s is an absolute http(s) URL without
// userinfo, query or fragment, made only of characters that cannot break
// out of Markdown, JSON or a shell's single quotes.
func ValidBaseURL(s string) bool {
	for _, c := range s {
		if c <= ' ' || c >= 0x7f || strings.ContainsRune("\"'`<>\\{}|^ ", c) {
			return false
		}
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && u.RawQuery == "" && u.Fragment == "" && !u.ForceQuery
}

// normalizeBaseURL checks that s is empty or an absolute http(s) URL without
// query or fragment, and strips its trailing slashes.
func normalizeBaseURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("apidocs: base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || !ValidBaseURL(s) {
		return "", fmt.Errorf("apidocs: base URL %q: want an absolute http or https URL without query or fragment", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// OpenAPIJSON returns the OpenAPI document as JSON, byte for byte as written.
// The caller may modify the returned slice.
func (d *Docs) OpenAPIJSON() []byte { return bytes.Clone(d.openAPI) }

// LLMsTxt returns the documentation index in the llms.txt format
// (https://llmstxt.org/). The caller may modify the returned slice.
func (d *Docs) LLMsTxt() []byte { return bytes.Clone(d.llms) }

// LLMsFullTxt returns every guide and the full API reference as one Markdown
// file. The caller may modify the returned slice.
func (d *Docs) LLMsFullTxt() []byte { return bytes.Clone(d.llmsFull) }

// Page returns the Markdown of the page called name (without ".md", such as
// "quickstart"), and false when there is no such page. The caller may modify
// the returned slice.
func (d *Docs) Page(name string) ([]byte, bool) {
	for _, p := range d.pages {
		if p.Name == name {
			return bytes.Clone(p.body), true
		}
	}
	return nil, false
}

// Pages lists the pages in the order of llms.txt, the API reference last.
func (d *Docs) Pages() []PageInfo {
	infos := make([]PageInfo, len(d.pages))
	for i, p := range d.pages {
		infos[i] = p.PageInfo
	}
	return infos
}
