package apidocs_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

// wantOperations lists every documented path and its methods (the wire
// contract of both services).
var wantOperations = map[string][]string{
	"/api/v1/oauth/token/":                    {http.MethodPost},
	"/api/v1/oauth/introspect/":               {http.MethodPost},
	"/api/v1/oauth/revoke/":                   {http.MethodPost},
	"/.well-known/jwks.json":                  {http.MethodGet},
	"/.well-known/oauth-authorization-server": {http.MethodGet},
	"/api/v1/me/":                             {http.MethodGet},
	"/api/v1/schema/":                         {http.MethodGet},
	"/llms.txt":                               {http.MethodGet},
	"/llms-full.txt":                          {http.MethodGet},
	"/docs/{page}.md":                         {http.MethodGet},
	"/healthz":                                {http.MethodGet},
	"/readyz":                                 {http.MethodGet},
}

// wantScopes are the four scopes of the table in
// guides/scopes-and-audiences.md, Scopes.
var wantScopes = []string{"events.subscribe", "patients.read", "programme.metrics.read", "referrals.write"}

func newDocs(t *testing.T) *apidocs.Docs {
	t.Helper()
	d, err := apidocs.New("")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

// loadDoc loads the served OpenAPI document with kin-openapi, as a client
// would.
func loadDoc(t *testing.T, d *apidocs.Docs) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(d.OpenAPIJSON())
	if err != nil {
		t.Fatalf("load OpenAPI document: %v", err)
	}
	return doc
}

// loadFile loads openapi.json from the package directory, so that the
// document's own tests report their findings even when New fails.
func loadFile(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("openapi.json")
	if err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	return doc
}

func TestOpenAPIJSONServedAsIs(t *testing.T) {
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := newDocs(t).OpenAPIJSON(); !bytes.Equal(got, want) {
		t.Error("OpenAPIJSON differs from openapi.json")
	}
}

func TestOpenAPIDocumentValidates(t *testing.T) {
	doc := loadFile(t)
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() && doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.1.x or 3.0.3", doc.OpenAPI)
	}
	if doc.Info.Version != "1.0.0" {
		t.Errorf("info.version = %q, want 1.0.0", doc.Info.Version)
	}
	if doc.Info.Title == "" {
		t.Error("info.title is empty")
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/" {
		t.Errorf("servers = %v, want one server with url /", doc.Servers)
	}
}

func TestOpenAPIJSONIsACopy(t *testing.T) {
	d := newDocs(t)
	b := d.OpenAPIJSON()
	want := string(b)
	b[0] = 'X'
	if got := string(d.OpenAPIJSON()); got != want {
		t.Error("modifying the result of OpenAPIJSON changed the document")
	}
}

func TestEveryPathAndMethod(t *testing.T) {
	doc := loadDoc(t, newDocs(t))
	got := make(map[string][]string)
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			got[path] = append(got[path], method)
		}
		slices.Sort(got[path])
	}
	for path, methods := range wantOperations {
		if !slices.Equal(got[path], methods) {
			t.Errorf("%s: methods %v, want %v", path, got[path], methods)
		}
	}
	for path := range got {
		if _, ok := wantOperations[path]; !ok {
			t.Errorf("undocumented path %s in the document", path)
		}
	}
}

// flatten returns the names of the properties of s and of its nested object
// properties ("organization.name"), and of those that are required.
func flatten(s *openapi3.Schema, prefix string) (props, required []string) {
	for name, p := range s.Properties {
		props = append(props, prefix+name)
		if slices.Contains(s.Required, name) {
			required = append(required, prefix+name)
		}
		if p.Value.Type.Is("object") {
			np, nr := flatten(p.Value, prefix+name+".")
			props = append(props, np...)
			required = append(required, nr...)
		}
	}
	slices.Sort(props)
	slices.Sort(required)
	return props, required
}

func TestClientDescriptionMatchesSpec(t *testing.T) {
	doc := loadDoc(t, newDocs(t))
	// The body of GET /api/v1/me/ (guides/quickstart.md, 3. Call the API):
	// 11 fields, all required.
	want := []string{
		"api_version", "audience", "client_id", "environment", "name", "organization",
		"organization.name", "organization.slug", "rate_limit_per_minute", "scopes", "token_expires_at",
	}
	ref := doc.Components.Schemas["ClientDescription"]
	if ref == nil {
		t.Fatal("no ClientDescription schema")
	}
	s := ref.Value
	props, required := flatten(s, "")
	if !slices.Equal(props, want) {
		t.Errorf("properties = %v, want %v", props, want)
	}
	if !slices.Equal(required, want) {
		t.Errorf("required = %v, want %v", required, want)
	}

	enums := map[string][]any{
		"audience":    {"pharma", "hospital", "psp_partner"},
		"environment": {"sandbox", "live"},
		"api_version": {"1"},
	}
	for name, values := range enums {
		if got := s.Properties[name].Value.Enum; !slices.Equal(got, values) {
			t.Errorf("%s enum = %v, want %v", name, got, values)
		}
	}
	checks := []struct {
		field, typ, format string
	}{
		{"api_version", "string", ""},
		{"client_id", "string", ""},
		{"name", "string", ""},
		{"audience", "string", ""},
		{"organization", "object", ""},
		{"environment", "string", ""},
		{"scopes", "array", ""},
		{"token_expires_at", "string", "date-time"},
		{"rate_limit_per_minute", "integer", ""},
	}
	for _, c := range checks {
		v := s.Properties[c.field].Value
		if !v.Type.Is(c.typ) || v.Format != c.format {
			t.Errorf("%s: type %v format %q, want %s %q", c.field, v.Type, v.Format, c.typ, c.format)
		}
	}
	if !s.Properties["scopes"].Value.Items.Value.Type.Is("string") {
		t.Error("scopes items are not strings")
	}

	me := doc.Paths.Value("/api/v1/me/").Get
	if got := me.Responses.Status(200).Value.Content.Get("application/json").Schema.Value; got != s {
		t.Error("GET /api/v1/me/ 200 does not answer ClientDescription")
	}
}

func TestMeOperation(t *testing.T) {
	doc := loadDoc(t, newDocs(t))
	me := doc.Paths.Value("/api/v1/me/").Get
	statuses := slices.Sorted(maps.Keys(me.Responses.Map()))
	if want := []string{"200", "400", "401", "405", "429", "500", "503"}; !slices.Equal(statuses, want) {
		t.Errorf("responses %v, want %v", statuses, want)
	}
	var schemes []string
	for _, req := range *me.Security {
		for name := range req {
			schemes = append(schemes, name)
		}
	}
	slices.Sort(schemes)
	if want := []string{"bearerAuth", "dpopAuth", "oauth2"}; !slices.Equal(schemes, want) {
		t.Errorf("security schemes %v, want %v", schemes, want)
	}
	headers := map[int][]string{
		200: {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"},
		401: {"WWW-Authenticate"},
		429: {"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"},
		503: {"Retry-After"},
	}
	for status, names := range headers {
		resp := me.Responses.Status(status).Value
		for _, name := range names {
			if h := resp.Headers[name]; h == nil || !h.Value.Required {
				t.Errorf("%d: header %s missing or not required", status, name)
			}
		}
	}
	// DPoP (RFC 9449 section 7.1): the scheme, the proof header, the
	// challenges of a refused DPoP request and the nonce header.
	if ss := doc.Components.SecuritySchemes["dpopAuth"]; ss == nil || ss.Value.Type != "http" || ss.Value.Scheme != "DPoP" {
		t.Error("no http security scheme DPoP (dpopAuth)")
	}
	if p := me.Parameters.GetByInAndName("header", "DPoP"); p == nil || p.Required {
		t.Error("no optional DPoP header parameter")
	}
	challenge := me.Responses.Status(401).Value.Headers["WWW-Authenticate"].Value.Examples
	for name, want := range map[string]string{
		"invalid_token":      `Bearer realm="api", error="invalid_token"`,
		"invalid_dpop_proof": `DPoP error="invalid_dpop_proof", error_description="the DPoP proof's key is not the key the access token is bound to", algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`,
		"dpop_invalid_token": `DPoP error="invalid_token", algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`,
	} {
		if ex := challenge[name]; ex == nil || ex.Value.Value != want {
			t.Errorf("401 WWW-Authenticate example %s is not %s", name, want)
		}
	}
	for _, status := range []int{200, 401} {
		if me.Responses.Status(status).Value.Headers["DPoP-Nonce"] == nil {
			t.Errorf("%d: no DPoP-Nonce header", status)
		}
	}
	for _, status := range []int{400, 401, 429, 500, 503} {
		s := me.Responses.Status(status).Value.Content.Get("application/json").Schema.Value
		if !slices.Equal(s.Required, []string{"detail"}) || !s.Properties["detail"].Value.Type.Is("string") {
			t.Errorf("%d: error schema is not {detail: string}", status)
		}
	}
}

func TestTokenOperation(t *testing.T) {
	doc := loadDoc(t, newDocs(t))
	op := doc.Paths.Value("/api/v1/oauth/token/").Post
	for _, ct := range []string{"application/x-www-form-urlencoded", "application/json"} {
		mt := op.RequestBody.Value.Content[ct]
		if mt == nil {
			t.Fatalf("request body lacks %s", ct)
		}
		s := mt.Schema.Value
		for _, f := range []string{"grant_type", "scope", "client_id", "client_secret"} {
			if s.Properties[f] == nil {
				t.Errorf("%s: request body lacks field %s", ct, f)
			}
		}
		if !slices.Equal(s.Required, []string{"grant_type"}) {
			t.Errorf("%s: required = %v, want [grant_type]", ct, s.Required)
		}
	}
	var hasBasic, hasAnonymous bool
	for _, req := range *op.Security {
		if _, ok := req["clientSecretBasic"]; ok {
			hasBasic = true
		}
		if len(req) == 0 {
			hasAnonymous = true
		}
	}
	if !hasBasic || !hasAnonymous {
		t.Errorf("security = %v, want clientSecretBasic or {} (client_secret_post)", *op.Security)
	}

	tok := op.Responses.Status(200).Value
	if s := tok.Content.Get("application/json").Schema.Value; !slices.Equal(s.Required, []string{"access_token", "token_type", "expires_in", "scope"}) {
		t.Errorf("token response required = %v", s.Required)
	}
	for _, h := range []string{"Cache-Control", "Pragma"} {
		if tok.Headers[h] == nil {
			t.Errorf("200 lacks header %s", h)
		}
	}
	wantErrors := map[int][]string{
		400: {"invalid_request", "unsupported_grant_type", "invalid_scope"},
		401: {"invalid_client"},
		429: {"slow_down"},
		503: {"temporarily_unavailable"},
	}
	for status, codes := range wantErrors {
		resp := op.Responses.Status(status)
		if resp == nil {
			t.Errorf("no %d response", status)
			continue
		}
		mt := resp.Value.Content.Get("application/json")
		s := mt.Schema.Value
		if !slices.Equal(s.Required, []string{"error", "error_description"}) {
			t.Errorf("%d: required = %v", status, s.Required)
		}
		enum := s.Properties["error"].Value.Enum
		for _, code := range codes {
			if !slices.Contains(enum, any(code)) {
				t.Errorf("%d: error enum lacks %s", status, code)
			}
		}
		if mt.Example == nil && len(mt.Examples) == 0 {
			t.Errorf("%d: no example", status)
		}
	}
	if h := op.Responses.Status(401).Value.Headers["WWW-Authenticate"]; h == nil {
		t.Error("401 lacks WWW-Authenticate")
	}
	for _, status := range []int{429, 503} {
		if h := op.Responses.Status(status).Value.Headers["Retry-After"]; h == nil || !h.Value.Required {
			t.Errorf("%d lacks a required Retry-After", status)
		}
	}
}

func TestSecuritySchemes(t *testing.T) {
	doc := loadDoc(t, newDocs(t))
	schemes := doc.Components.SecuritySchemes

	oauth := schemes["oauth2"]
	if oauth == nil || oauth.Value.Type != "oauth2" || oauth.Value.Flows == nil || oauth.Value.Flows.ClientCredentials == nil {
		t.Fatal("no oauth2 scheme with a clientCredentials flow")
	}
	flow := oauth.Value.Flows.ClientCredentials
	if flow.TokenURL != "/api/v1/oauth/token/" {
		t.Errorf("tokenUrl = %q", flow.TokenURL)
	}
	var scopes []string
	for scope, desc := range flow.Scopes {
		scopes = append(scopes, scope)
		if strings.TrimSpace(desc) == "" {
			t.Errorf("scope %s has no description", scope)
		}
	}
	slices.Sort(scopes)
	if !slices.Equal(scopes, wantScopes) {
		t.Errorf("scopes = %v, want %v", scopes, wantScopes)
	}

	if s := schemes["bearerAuth"]; s == nil || s.Value.Type != "http" || s.Value.Scheme != "bearer" {
		t.Error("bearerAuth is not an http bearer scheme")
	}
	if s := schemes["clientSecretBasic"]; s == nil || s.Value.Type != "http" || s.Value.Scheme != "basic" {
		t.Error("clientSecretBasic is not an http basic scheme")
	}
}

func TestDocsPageEnumListsEveryPage(t *testing.T) {
	d := newDocs(t)
	doc := loadDoc(t, d)
	param := doc.Paths.Value("/docs/{page}.md").Get.Parameters.GetByInAndName("path", "page")
	if param == nil {
		t.Fatal("no path parameter page")
	}
	var names []any
	for _, p := range d.Pages() {
		names = append(names, p.Name)
	}
	if !slices.Equal(param.Schema.Value.Enum, names) {
		t.Errorf("page enum = %v, want Pages() %v", param.Schema.Value.Enum, names)
	}
}

// example is one example of the document and the schema it must match.
type example struct {
	where  string
	value  any
	schema *openapi3.SchemaRef
}

// collectExamples returns every example of doc with its schema.
func collectExamples(doc *openapi3.T) []example {
	var out []example
	fromContent := func(where string, content openapi3.Content) {
		for ct, mt := range content {
			if mt.Example != nil {
				out = append(out, example{where + " " + ct, mt.Example, mt.Schema})
			}
			for name, ex := range mt.Examples {
				out = append(out, example{where + " " + ct + " " + name, ex.Value.Value, mt.Schema})
			}
		}
	}
	fromParameter := func(where string, p *openapi3.Parameter) {
		if p.Example != nil {
			out = append(out, example{where, p.Example, p.Schema})
		}
		for name, ex := range p.Examples {
			out = append(out, example{where + " " + name, ex.Value.Value, p.Schema})
		}
		fromContent(where, p.Content)
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			for _, p := range op.Parameters {
				fromParameter(where+" parameter "+p.Value.Name, p.Value)
			}
			if op.RequestBody != nil {
				fromContent(where+" request", op.RequestBody.Value.Content)
			}
			for status, resp := range op.Responses.Map() {
				fromContent(where+" "+status, resp.Value.Content)
				for name, h := range resp.Value.Headers {
					fromParameter(where+" "+status+" header "+name, &h.Value.Parameter)
				}
			}
		}
	}
	for name, s := range doc.Components.Schemas {
		if s.Value.Example != nil {
			out = append(out, example{"schema " + name, s.Value.Example, s})
		}
		for i, v := range s.Value.Examples {
			out = append(out, example{"schema " + name + " " + strconv.Itoa(i), v, s})
		}
	}
	return out
}

func TestExamplesMatchSchemas(t *testing.T) {
	doc := loadFile(t)
	var opts []openapi3.SchemaValidationOption
	if doc.IsOpenAPI31OrLater() {
		opts = append(opts, openapi3.EnableJSONSchema2020())
	}
	examples := collectExamples(doc)
	if len(examples) < 30 {
		t.Fatalf("found %d examples, want at least 30", len(examples))
	}
	for _, ex := range examples {
		if ex.schema == nil {
			t.Errorf("%s: example without schema", ex.where)
			continue
		}
		if err := ex.schema.Value.VisitJSON(ex.value, opts...); err != nil {
			t.Errorf("%s: example does not match its schema: %v", ex.where, err)
		}
	}
}

func TestBrokenExampleIsCaught(t *testing.T) {
	doc := loadDoc(t, newDocs(t))
	s := doc.Components.Schemas["ClientDescription"].Value
	bad := map[string]any{"api_version": "2"}
	if err := s.VisitJSON(bad, openapi3.EnableJSONSchema2020()); err == nil {
		t.Error("VisitJSON accepted an invalid client description")
	}
}

func TestEveryErrorResponseHasAnExample(t *testing.T) {
	doc := loadDoc(t, newDocs(t))
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				mt := resp.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil || !strings.HasPrefix(status, "4") && !strings.HasPrefix(status, "5") {
					continue
				}
				if mt.Example == nil && len(mt.Examples) == 0 {
					t.Errorf("%s %s %s: no example", method, path, status)
				}
			}
		}
	}
}

// realisticSecret matches a client secret of the real length.
var realisticSecret = regexp.MustCompile(`svc_cs_[^\s]{43}`)

func TestNoRealisticSecret(t *testing.T) {
	d := newDocs(t)
	texts := map[string][]byte{
		"openapi.json":  d.OpenAPIJSON(),
		"llms.txt":      d.LLMsTxt(),
		"llms-full.txt": d.LLMsFullTxt(),
	}
	for _, p := range d.Pages() {
		texts[p.Name], _ = d.Page(p.Name)
	}
	for name, text := range texts {
		if m := realisticSecret.Find(text); m != nil {
			t.Errorf("%s holds a realistic client secret %q", name, m)
		}
	}
}

func TestPages(t *testing.T) {
	d := newDocs(t)
	want := []string{
		"quickstart", "authentication", "scopes-and-audiences", "errors",
		"rate-limits", "sandbox", "secret-rotation", "dpop", "mtls", "api-reference",
	}
	var names []string
	for _, p := range d.Pages() {
		names = append(names, p.Name)
		if p.Title == "" || p.Description == "" {
			t.Errorf("%s: empty title or description", p.Name)
		}
		body, ok := d.Page(p.Name)
		if !ok {
			t.Errorf("Page(%q) not found", p.Name)
			continue
		}
		if !strings.HasPrefix(string(body), "# "+p.Title+"\n") {
			t.Errorf("%s does not start with the heading %q", p.Name, "# "+p.Title)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("pages %v, want %v", names, want)
	}
	for _, name := range []string{"", "nope", "quickstart.md", "../openapi"} {
		if _, ok := d.Page(name); ok {
			t.Errorf("Page(%q) found", name)
		}
	}
}

// guideFacts lists what each guide must state (the partner API's tables and
// rules: each guide is where partners read them).
var guideFacts = map[string][]string{
	"quickstart": {
		"curl", "golang.org/x/oauth2/clientcredentials", "/api/v1/oauth/token/", "grant_type=client_credentials",
		"Authorization: Bearer", "/api/v1/me/", "{base_url}",
	},
	"authentication": {
		"60 seconds", "retry once", "Retry-After", "3600", "HTTP Basic (preferred", "client_secret_post",
		"no refresh token", "ReuseTokenSourceWithExpiry",
		"private_key_jwt", "openssl ecparam -name prime256v1", "openssl genpkey -algorithm ed25519",
		"--auth private_key_jwt --jwks-file jwks.json", "rotate-keys", "/api/v1/oauth/revoke/", "RFC 7009",
	},
	"scopes-and-audiences": {
		"programme.metrics.read", "events.subscribe", "patients.read", "referrals.write",
		"Next release, hospitals only", "`pharma`", "400 `invalid_scope`", "403", "404",
		"hospital", "psp_partner",
	},
	"errors": {
		"| 400 | `invalid_request` |", "| 400 | `unsupported_grant_type` |", "| 400 | `invalid_scope` |",
		"| 401 | `invalid_client` |", "| 429 | `slow_down` |", "`error_description`", "`detail`",
		"| 200 |", "| 400 |", "| 401 |", "| 403 |", "| 404 |", "| 429 |", "| 5xx |", "exponential backoff",
	},
	"rate-limits": {
		"120 per minute", "30 per minute", "Retry-After: 60", "slow_down",
		"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "rate_limit_per_minute",
	},
	"sandbox": {"sandbox-simulation", "authserver sandbox seed", "demo data", "never real patients"},
	"dpop": {
		"RFC 9449", "`dpop+jwt`", "`jti`", "`htm`", "`htu`", "`iat`", "`ath`", "Authorization: DPoP", "`token_type` of `Bearer`",
		"dpop_bound_access_tokens", "`invalid_dpop_proof`", "`use_dpop_nonce`", "DPoP-Nonce", "off by default",
		`WWW-Authenticate: DPoP error="invalid_dpop_proof"`, `algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`, "DPoPKey",
		"dpop_signing_alg_values_supported",
	},
	"secret-rotation": {
		"authserver clients rotate-secret ID", "authserver clients revoke ID", "at once", "401 `invalid_client`",
		"authserver clients add-secret ID", "authserver clients retire-secret ID OLD_SECRET_ID",
	},
}

func TestGuidesStateTheSpec(t *testing.T) {
	d := newDocs(t)
	for name, facts := range guideFacts {
		body, ok := d.Page(name)
		if !ok {
			t.Errorf("no page %s", name)
			continue
		}
		for _, fact := range facts {
			if !strings.Contains(string(body), fact) {
				t.Errorf("%s does not mention %q", name, fact)
			}
		}
	}
}

// markdownLink matches "- [Title](url): description" list items.
var markdownLink = regexp.MustCompile(`(?m)^- \[([^\]]+)\]\(([^)]+)\): (.+)$`)

// section returns the lines of md under the "## name" heading.
func section(md, name string) string {
	_, after, ok := strings.Cut(md, "\n## "+name+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(after, "\n## "); i >= 0 {
		after = after[:i]
	}
	return after
}

func TestLLMsTxt(t *testing.T) {
	tests := []struct{ baseURL, base string }{
		{"", ""},
		{"https://api.example.com/", "https://api.example.com"},
		{"http://localhost:8081/partner", "http://localhost:8081/partner"},
	}
	for _, tt := range tests {
		base := tt.base
		t.Run("base="+tt.baseURL, func(t *testing.T) {
			d, err := apidocs.New(tt.baseURL)
			if err != nil {
				t.Fatal(err)
			}
			txt := string(d.LLMsTxt())
			lines := strings.Split(txt, "\n")
			if !strings.HasPrefix(lines[0], "# ") || lines[1] != "" || !strings.HasPrefix(lines[2], "> ") {
				t.Fatalf("llms.txt does not start with an H1 and a blockquote:\n%s", txt)
			}
			docs := section(txt, "Docs")
			links := markdownLink.FindAllStringSubmatch(docs, -1)
			linked := make(map[string]string)
			for _, l := range links {
				name, ok := strings.CutPrefix(l[2], base+"/docs/")
				if !ok {
					t.Errorf("link %s is not %s/docs/...", l[2], base)
					continue
				}
				name, ok = strings.CutSuffix(name, ".md")
				if !ok {
					t.Errorf("link %s does not end in .md", l[2])
				}
				if _, found := d.Page(name); !found {
					t.Errorf("link %s does not resolve via Page(%q)", l[2], name)
				}
				linked[name] = l[1]
			}
			for _, p := range d.Pages() {
				if linked[p.Name] != p.Title {
					t.Errorf("page %s not linked with title %q", p.Name, p.Title)
				}
			}
			optional := section(txt, "Optional")
			for _, want := range []string{base + "/api/v1/schema/?format=json", base + "/llms-full.txt"} {
				if !strings.Contains(optional, "]("+want+")") {
					t.Errorf("Optional section lacks a link to %s", want)
				}
			}
		})
	}
}

func TestNewRejectsBadBaseURL(t *testing.T) {
	for _, base := range []string{"api.example.com", "ftp://x", "https://x/?a=b", "https://x/#f", "/relative"} {
		if _, err := apidocs.New(base); err == nil {
			t.Errorf("New(%q) succeeded", base)
		}
	}
}

func TestLLMsFullTxt(t *testing.T) {
	d := newDocs(t)
	full := string(d.LLMsFullTxt())
	for _, p := range d.Pages() {
		if !strings.Contains(full, "## "+p.Title+"\n") {
			t.Errorf("llms-full.txt lacks the page %q", p.Title)
		}
	}
	for path := range loadDoc(t, d).Paths.Map() {
		if !strings.Contains(full, path) {
			t.Errorf("llms-full.txt does not mention %s", path)
		}
	}
	if strings.Count(full, "\n# ") != 0 {
		t.Error("llms-full.txt has more than one H1")
	}
}

func TestAPIReference(t *testing.T) {
	d := newDocs(t)
	ref, ok := d.Page("api-reference")
	if !ok {
		t.Fatal("no api-reference page")
	}
	text := string(ref)
	doc := loadDoc(t, d)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			heading := "\n### " + method + " " + path + "\n"
			_, sec, ok := strings.Cut(text, heading)
			if !ok {
				t.Errorf("reference lacks %q", strings.TrimSpace(heading))
				continue
			}
			if i := strings.Index(sec, "\n### "); i >= 0 {
				sec = sec[:i]
			}
			if !strings.Contains(sec, op.Summary) {
				t.Errorf("%s %s: summary missing", method, path)
			}
			for status := range op.Responses.Map() {
				if !strings.Contains(sec, "\n| "+status+" | ") {
					t.Errorf("%s %s: status %s missing", method, path, status)
				}
			}
			for _, p := range op.Parameters {
				if !strings.Contains(sec, "| `"+p.Value.Name+"` | "+p.Value.In+" |") {
					t.Errorf("%s %s: parameter %s missing", method, path, p.Value.Name)
				}
			}
			if op.RequestBody != nil {
				for ct, mt := range op.RequestBody.Value.Content {
					if !strings.Contains(sec, ct) {
						t.Errorf("%s %s: request content type %s missing", method, path, ct)
					}
					for field := range mt.Schema.Value.Properties {
						if !strings.Contains(sec, "| `"+field+"` |") {
							t.Errorf("%s %s: request field %s missing", method, path, field)
						}
					}
				}
			}
		}
	}
	for name, s := range doc.Components.Schemas {
		if !strings.Contains(text, "\n### "+name+"\n") {
			t.Errorf("reference lacks schema %s", name)
		}
		for field := range s.Value.Properties {
			if !strings.Contains(text, "| `"+field+"` |") {
				t.Errorf("reference lacks field %s.%s", name, field)
			}
		}
	}
	for _, scope := range wantScopes {
		if !strings.Contains(text, "| `"+scope+"` |") {
			t.Errorf("reference lacks scope %s", scope)
		}
	}
	for _, row := range []string{
		"| `organization.slug` | string | yes |",
		"| `token_expires_at` | string (date-time) | yes |",
	} {
		if !strings.Contains(text, row) {
			t.Errorf("reference lacks row %q", row)
		}
	}
}

// The reference's error catalogue lists every error answer the document
// shows: each JSON example of a 4xx or 5xx response has its row, naming the
// operation.
func TestErrorCatalogue(t *testing.T) {
	d := newDocs(t)
	ref, _ := d.Page("api-reference")
	_, catalogue, ok := strings.Cut(string(ref), "\n## Error catalogue\n")
	if !ok {
		t.Fatal("the reference has no error catalogue")
	}
	catalogue, _, _ = strings.Cut(catalogue, "\n## ")
	doc := loadDoc(t, d)
	n := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status, resp := range op.Responses.Map() {
				mt := resp.Value.Content.Get("application/json")
				if status < "400" || mt == nil {
					continue
				}
				values := []any{mt.Example}
				for _, ex := range mt.Examples {
					values = append(values, ex.Value.Value)
				}
				for _, v := range values {
					body, ok := v.(map[string]any)
					if !ok {
						continue
					}
					code, msg := "(none)", body["detail"]
					if c, ok := body["error"].(string); ok {
						code, msg = "`"+c+"`", body["error_description"]
					}
					row := fmt.Sprintf("\n| %s | %s | %s | ", status, code, msg)
					i := strings.Index(catalogue, row)
					if i < 0 {
						t.Errorf("%s %s %s: no catalogue row %q", method, path, status, row)
						continue
					}
					line, _, _ := strings.Cut(catalogue[i+1:], "\n")
					if !strings.Contains(line, method+" `"+path+"`") {
						t.Errorf("catalogue row %q does not name %s %s", line, method, path)
					}
					n++
				}
			}
		}
	}
	if n < 16 {
		t.Errorf("%d error examples found in the document, want at least 16", n)
	}
}
