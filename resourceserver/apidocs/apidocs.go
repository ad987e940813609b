package apidocs

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

//go:embed openapi.json
var openAPIJSON []byte

//go:embed guides/*.md
var guidesFS embed.FS

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

// guides lists the hand-written pages in the order of llms.txt. Each Name is
// the file guides/<Name>.md, whose first line is "# <Title>".
var guides = []struct{ name, description string }{
	{"quickstart", "Get a token with curl or the Go SDK (pkg/partnerclient) and call GET /api/v1/me/."},
	{"authentication", "Client credentials and the secret format, private_key_jwt (key pairs, JWK sets, client assertions, key rotation), the token format (svc_at_ + RFC 9068 JWT), caching and renewal, revoking a token (RFC 7009), retrying on 401, 429 and 5xx, RFC 8414 metadata (no OIDC discovery)."},
	{"scopes-and-audiences", "The four scopes, the partner audiences, and the rules that decide which scopes a token carries."},
	{"errors", "The OAuth error format of the token endpoint, the detail format of the API, every status code and what to do."},
	{"rate-limits", "120 API requests and 30 token requests per minute per client, RateLimit-* and Retry-After headers."},
	{"sandbox", "The sandbox-simulation organisation with demo data only, and moving from sandbox to live."},
	{"secret-rotation", "Rotating a client secret without downtime (two secrets: add-secret, retire-secret), rotate-secret and revoking a client: which tokens stop working at once."},
	{"dpop", "Sender-constrained tokens (DPoP, RFC 9449): a key pair of your own, the proof JWT, getting a DPoP-bound token (token_type DPoP), calling the API with Authorization: DPoP and a proof, server nonces, the refusals and the Go SDK's DPoPKey."},
}

// Name, title and description of the generated reference page.
const (
	referenceName        = "api-reference"
	referenceTitle       = "API reference"
	referenceDescription = "Every endpoint, parameter, request body, response, header and schema, generated from the OpenAPI document."
)

// Docs is the loaded documentation. It is immutable and safe for concurrent
// use.
type Docs struct {
	openAPI  []byte
	doc      *openapi3.T
	router   routers.Router
	pages    []page
	llms     []byte
	llmsFull []byte
}

// New loads and validates the embedded OpenAPI document and renders the API
// reference and the llms.txt files.
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
	e, err := loadEmbedded()
	if err != nil {
		return nil, err
	}

	d := &Docs{openAPI: openAPIJSON, doc: e.doc, router: e.router, pages: slices.Clone(e.pages)}
	d.llms = d.renderLLMsTxt(base)
	d.llmsFull = d.renderLLMsFullTxt(base)
	if base != "" {
		// Every example names the deployment's own address.
		ph, b := []byte(BaseURLPlaceholder), []byte(base)
		d.openAPI = bytes.ReplaceAll(d.openAPI, ph, b)
		d.llms = bytes.ReplaceAll(d.llms, ph, b)
		d.llmsFull = bytes.ReplaceAll(d.llmsFull, ph, b)
		for i := range d.pages {
			d.pages[i].body = bytes.ReplaceAll(d.pages[i].body, ph, b)
		}
	}
	return d, nil
}

// embedded is what New derives from the embedded files alone, whatever the
// base URL: the parsed and validated OpenAPI document, its router and the
// pages with their placeholders. Nothing changes any of them after
// loadEmbedded, so every Docs shares them.
type embedded struct {
	doc    *openapi3.T
	router routers.Router
	pages  []page
}

// loadEmbedded parses, validates and renders the embedded files once per
// process (about 50 ms, 180 ms under the race detector: a test process
// builds a resource server, and so a Docs, per test).
var loadEmbedded = sync.OnceValues(func() (*embedded, error) {
	ctx := context.Background()
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromData(openAPIJSON)
	if err != nil {
		return nil, fmt.Errorf("apidocs: load openapi.json: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("apidocs: validate openapi.json: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("apidocs: route openapi.json: %w", err)
	}
	idx, err := indexJSON(openAPIJSON)
	if err != nil {
		return nil, fmt.Errorf("apidocs: index openapi.json: %w", err)
	}

	e := &embedded{doc: doc, router: router}
	files, err := fs.Glob(guidesFS, "guides/*.md")
	if err != nil || len(files) != len(guides) {
		return nil, fmt.Errorf("apidocs: %d files in guides/, %d listed in the guides table", len(files), len(guides))
	}
	for _, g := range guides {
		body, err := guidesFS.ReadFile("guides/" + g.name + ".md")
		if err != nil {
			return nil, fmt.Errorf("apidocs: %w", err)
		}
		title, err := pageTitle(body)
		if err != nil {
			return nil, fmt.Errorf("apidocs: guides/%s.md: %w", g.name, err)
		}
		e.pages = append(e.pages, page{PageInfo{g.name, title, g.description}, body})
	}
	ref := renderReference(doc, idx, referenceTitle)
	e.pages = append(e.pages, page{PageInfo{referenceName, referenceTitle, referenceDescription}, ref})
	return e, nil
})

// BaseURLPlaceholder stands for the deployment's public base address in the
// documents. New replaces it when given a base URL; otherwise the server
// replaces it per request with the address the request was sent to
// (ReplaceBaseURL).
const BaseURLPlaceholder = "{base_url}"

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

// pageTitle returns the text of the first line of body, which must be a
// level-one heading.
func pageTitle(body []byte) (string, error) {
	line, _, _ := bytes.Cut(body, []byte("\n"))
	title, ok := strings.CutPrefix(string(line), "# ")
	if !ok || strings.TrimSpace(title) == "" {
		return "", errors.New(`first line is not a "# Title" heading`)
	}
	return strings.TrimSpace(title), nil
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
