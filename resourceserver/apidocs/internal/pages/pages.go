package pages

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// BaseURLPlaceholder stands for the deployment's public base address in the
// documents (apidocs.BaseURLPlaceholder).
const BaseURLPlaceholder = "{base_url}"

// Guide is one hand-written page: the file guides/<Name>.md, whose first
// line is "# <Title>".
type Guide struct {
	// Name identifies the page in its path /docs/<Name>.md.
	Name string
	// Description is a one-sentence summary, as listed in llms.txt.
	Description string
}

// Guides lists the hand-written pages in the order of llms.txt.
var Guides = []Guide{
	{"quickstart", "Get a token with curl or the Go SDK (pkg/partnerclient) and call GET /api/v1/me/."},
	{"authentication", "Client credentials and the secret format, private_key_jwt (key pairs, JWK sets, client assertions, key rotation), the token format (svc_at_ + RFC 9068 JWT), caching and renewal, revoking a token (RFC 7009), retrying on 401, 429 and 5xx, RFC 8414 metadata (no OIDC discovery)."},
	{"scopes-and-audiences", "The four scopes, the partner audiences, and the rules that decide which scopes a token carries."},
	{"errors", "The OAuth error format of the token endpoint, the detail format of the API, every status code and what to do."},
	{"rate-limits", "120 API requests and 30 token requests per minute per client, RateLimit-* and Retry-After headers."},
	{"sandbox", "The sandbox-simulation organisation with demo data only, and moving from sandbox to live."},
	{"secret-rotation", "Rotating a client secret without downtime (two secrets: add-secret, retire-secret), rotate-secret and revoking a client: which tokens stop working at once."},
	{"dpop", "Sender-constrained tokens (DPoP, RFC 9449): a key pair of your own, the proof JWT, getting a DPoP-bound token (token_type DPoP), calling the API with Authorization: DPoP and a proof, server nonces, the refusals and the Go SDK's DPoPKey."},
	{"mtls", "Mutual TLS (RFC 8705): certificate-bound tokens (cnf.x5t#S256) and certificate authentication (tls_client_auth, self_signed_tls_client_auth), getting a certificate registered, curl, x/oauth2, the Go SDK's Certificate and Authlib, and the errors."},
}

// Name, title and description of the generated reference page, listed
// after the guides.
const (
	ReferenceName        = "api-reference"
	ReferenceTitle       = "API reference"
	ReferenceDescription = "Every endpoint, parameter, request body, response, header and schema, generated from the OpenAPI document."
)

// Page is one page with its Markdown body.
type Page struct {
	Name, Title, Description string
	Body                     []byte
}

// ReadGuides reads the guides of fsys (guides/<Name>.md of Guides, and no
// other file there), in the order of Guides.
func ReadGuides(fsys fs.FS) ([]Page, error) {
	files, err := fs.Glob(fsys, "guides/*.md")
	if err != nil || len(files) != len(Guides) {
		return nil, fmt.Errorf("%d files in guides/, %d listed in pages.Guides", len(files), len(Guides))
	}
	out := make([]Page, 0, len(Guides))
	for _, g := range Guides {
		body, err := fs.ReadFile(fsys, "guides/"+g.Name+".md")
		if err != nil {
			return nil, err
		}
		title, err := Title(body)
		if err != nil {
			return nil, fmt.Errorf("guides/%s.md: %w", g.Name, err)
		}
		out = append(out, Page{g.Name, title, g.Description, body})
	}
	return out, nil
}

// Title returns the text of the first line of a page's body, which must be
// a level-one heading.
func Title(body []byte) (string, error) {
	line, _, _ := bytes.Cut(body, []byte("\n"))
	title, ok := strings.CutPrefix(string(line), "# ")
	if !ok || strings.TrimSpace(title) == "" {
		return "", errors.New(`first line is not a "# Title" heading`)
	}
	return strings.TrimSpace(title), nil
}

// GeneratedDir is the directory, beside openapi.json, of the files go
// generate writes (package render).
const GeneratedDir = "generated"

// The generated files, by their path under GeneratedDir. The llms.txt files
// come twice: with links relative to the host, for a server without
// --base-url, and with links under the placeholder {base_url}, which the
// server replaces with its configured base URL (the same bytes as
// rendering with that URL: the URL cannot hold "{").
const (
	ReferenceFile       = ReferenceName + ".md"
	LLMsFile            = "llms.txt"
	LLMsFullFile        = "llms-full.txt"
	BaseURLLLMsFile     = "with-base-url/llms.txt"
	BaseURLLLMsFullFile = "with-base-url/llms-full.txt"
)
