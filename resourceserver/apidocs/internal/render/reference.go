package render

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/getkin/kin-openapi/openapi3"
)

// templatesFS holds the page templates.
//
//go:embed templates/*.tmpl
var templatesFS embed.FS

// referenceTemplate lays the reference out: templates/reference.md.tmpl,
// fed by renderReference with a referenceView built from the document.
var referenceTemplate = template.Must(template.ParseFS(templatesFS, "templates/reference.md.tmpl"))

// referenceView is what the reference template shows: the document's parts
// in the author's order, every table cell already made safe (cell).
type referenceView struct {
	Title, InfoTitle, Version, OpenAPI, Description string
	Endpoints                                       []endpointRow
	Schemes                                         []schemeRow
	Flows                                           []flowView
	Groups                                          []groupView
	Errors                                          []errorRow
	Schemas                                         []schemaView
}

// errorRow is one error answer the document shows, with every operation
// that shows it: the error catalogue.
type errorRow struct {
	Status string
	// Code is the OAuth "error" (RFC 6749 section 5.2), "" for a "detail"
	// answer.
	Code, Message, Where string
}

type endpointRow struct{ Method, Path, Summary, Auth string }

type schemeRow struct{ Name, Kind, Description string }

type flowView struct {
	Scheme, Key, TokenURL string
	Scopes                []scopeRow
}

type scopeRow struct{ Name, Description string }

// groupView is the operations of one tag, or the untagged ones.
type groupView struct {
	Name, Description string
	Ops               []operationView
}

type operationView struct {
	Method, Path, Summary, OperationID, Description string
	// Auth is the sentence on authentication.
	Auth      string
	Params    []paramRow
	Body      *bodyView
	Responses []responseRow
	Headers   []headerRow
	Examples  []exampleView
}

type paramRow struct{ Name, In, Type, Required, Description string }

type bodyView struct {
	Required     bool
	Description  string
	ContentTypes string
	Schemas      []bodySchema
	Examples     []exampleView
}

type bodySchema struct {
	ContentType, Type string
	Fields            *fieldsView
}

type responseRow struct{ Status, Description, Content string }

type headerRow struct{ Status, Name, Type, Always, Description string }

// exampleView is one example: Lang is the code fence's language.
type exampleView struct{ Heading, Lang, Text string }

// fieldsView is the fields table of an object schema.
type fieldsView struct {
	Rows []fieldRow
	// Closed: the schema forbids other fields.
	Closed bool
}

type fieldRow struct{ Name, Type, Required, Description string }

// schemaView is a component schema: Fields for an object, else Type.
type schemaView struct {
	Name, Description, Type string
	Fields                  *fieldsView
}

// reference builds the view of one OpenAPI document.
type reference struct {
	doc *openapi3.T
	idx *jsonIndex
}

// operation is one method of one path.
type operation struct {
	method, path, ptr string
	op                *openapi3.Operation
}

// httpMethods lists the methods of a Path Item Object in the order the
// reference shows them.
var httpMethods = []string{
	http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete,
	http.MethodOptions, http.MethodHead, http.MethodPatch, http.MethodTrace,
}

// renderReference renders doc as a Markdown page titled title: the
// authentication schemes, an index of the endpoints, every operation grouped
// by its first tag, and every component schema.
func renderReference(doc *openapi3.T, idx *jsonIndex, title string) []byte {
	r := &reference{doc: doc, idx: idx}
	ops := r.operations()
	v := referenceView{Title: title, InfoTitle: doc.Info.Title, Version: doc.Info.Version, OpenAPI: doc.OpenAPI,
		Description: doc.Info.Description}
	for _, o := range ops {
		v.Endpoints = append(v.Endpoints, endpointRow{o.method, o.path, cell(o.op.Summary), cell(r.securityShort(o.op))})
	}
	v.Schemes, v.Flows = r.securitySchemes()
	done := make(map[*openapi3.Operation]bool)
	for _, tag := range doc.Tags {
		g := groupView{Name: tag.Name, Description: tag.Description}
		for _, o := range ops {
			if len(o.op.Tags) > 0 && o.op.Tags[0] == tag.Name {
				g.Ops = append(g.Ops, r.operation(o))
				done[o.op] = true
			}
		}
		if len(g.Ops) > 0 {
			v.Groups = append(v.Groups, g)
		}
	}
	other := groupView{Name: "Other endpoints"}
	for _, o := range ops {
		if !done[o.op] {
			other.Ops = append(other.Ops, r.operation(o))
		}
	}
	if len(other.Ops) > 0 {
		v.Groups = append(v.Groups, other)
	}
	v.Errors = r.errorCatalogue(ops)
	v.Schemas = r.schemas()
	var b bytes.Buffer
	if err := referenceTemplate.Execute(&b, v); err != nil {
		// The template and the view are this package's own: a test renders
		// every field of the embedded document.
		panic("apidocs: reference template: " + err.Error())
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// operations lists every operation, paths in document order.
func (r *reference) operations() []operation {
	var ops []operation
	paths := r.doc.Paths.Map()
	for _, path := range ordered(r.idx, "/paths", paths) {
		item := paths[path]
		for _, method := range httpMethods {
			if op := item.GetOperation(method); op != nil {
				ptr := "/paths/" + escapePointer(path) + "/" + strings.ToLower(method)
				ops = append(ops, operation{method: method, path: path, ptr: ptr, op: op})
			}
		}
	}
	return ops
}

// securityRequirements returns the requirements of op, the document's when op
// declares none.
func (r *reference) securityRequirements(op *openapi3.Operation) openapi3.SecurityRequirements {
	if op.Security != nil {
		return *op.Security
	}
	return r.doc.Security
}

// securityShort summarises the security requirements of op in a few words.
func (r *reference) securityShort(op *openapi3.Operation) string {
	reqs := r.securityRequirements(op)
	if len(reqs) == 0 {
		return "none"
	}
	alts := make([]string, 0, len(reqs))
	for _, req := range reqs {
		alts = append(alts, requirementText(req))
	}
	return strings.Join(alts, " or ")
}

// requirementText renders one Security Requirement Object: every named scheme
// applies together; an empty one means no scheme.
func requirementText(req openapi3.SecurityRequirement) string {
	if len(req) == 0 {
		return "no HTTP authentication scheme"
	}
	names := make([]string, 0, len(req))
	for name, scopes := range req {
		s := "`" + name + "`"
		if len(scopes) > 0 {
			s += " (scopes " + codeList(scopes) + ")"
		}
		names = append(names, s)
	}
	slices.Sort(names)
	return strings.Join(names, " and ")
}

// securitySchemes lists the component security schemes and their OAuth
// flows.
func (r *reference) securitySchemes() ([]schemeRow, []flowView) {
	if r.doc.Components == nil || len(r.doc.Components.SecuritySchemes) == 0 {
		return nil, nil
	}
	schemes := r.doc.Components.SecuritySchemes
	var rows []schemeRow
	var flows []flowView
	names := ordered(r.idx, "/components/securitySchemes", schemes)
	for _, name := range names {
		s := schemes[name].Value
		kind := s.Type
		switch s.Type {
		case "http":
			kind = "HTTP " + s.Scheme
		case "oauth2":
			kind = "OAuth 2.0"
		case "apiKey":
			kind = "API key in " + s.In + " `" + s.Name + "`"
		}
		rows = append(rows, schemeRow{name, kind, cell(s.Description)})
	}
	for _, name := range names {
		s := schemes[name].Value
		if s.Flows == nil {
			continue
		}
		for _, f := range []struct {
			key  string
			flow *openapi3.OAuthFlow
		}{
			{"clientCredentials", s.Flows.ClientCredentials},
			{"authorizationCode", s.Flows.AuthorizationCode},
			{"implicit", s.Flows.Implicit},
			{"password", s.Flows.Password},
		} {
			if f.flow == nil {
				continue
			}
			fv := flowView{Scheme: name, Key: f.key, TokenURL: f.flow.TokenURL}
			ptr := "/components/securitySchemes/" + escapePointer(name) + "/flows/" + f.key + "/scopes"
			for _, scope := range ordered(r.idx, ptr, f.flow.Scopes) {
				fv.Scopes = append(fv.Scopes, scopeRow{scope, cell(f.flow.Scopes[scope])})
			}
			flows = append(flows, fv)
		}
	}
	return rows, flows
}

// operation builds the view of one operation.
func (r *reference) operation(o operation) operationView {
	op := o.op
	v := operationView{Method: o.method, Path: o.path, Summary: op.Summary, OperationID: op.OperationID, Description: op.Description}
	switch reqs := r.securityRequirements(op); len(reqs) {
	case 0:
		v.Auth = "Authentication: none."
	case 1:
		v.Auth = "Authentication: " + requirementText(reqs[0]) + "."
	default:
		alts := make([]string, 0, len(reqs))
		for _, req := range reqs {
			alts = append(alts, requirementText(req))
		}
		v.Auth = "Authentication, any one of: " + strings.Join(alts, "; ") + "."
	}
	for _, p := range op.Parameters {
		pv := p.Value
		v.Params = append(v.Params, paramRow{pv.Name, pv.In, cell(typeText(pv.Schema)), yesNo(pv.Required), cell(pv.Description)})
	}
	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		v.Body = r.requestBody(rb, o.ptr)
	}
	responses := op.Responses.Map()
	statuses := ordered(r.idx, o.ptr+"/responses", responses)
	for _, status := range statuses {
		resp := responses[status]
		ptr := refPointer(resp.Ref, o.ptr+"/responses/"+status)
		var content []string
		for _, ct := range ordered(r.idx, ptr+"/content", resp.Value.Content) {
			c := "`" + ct + "`"
			if s := resp.Value.Content[ct].Schema; s != nil {
				c += ": " + typeText(s)
			}
			content = append(content, c)
		}
		desc := ""
		if resp.Value.Description != nil {
			desc = *resp.Value.Description
		}
		v.Responses = append(v.Responses, responseRow{status, cell(desc), cell(strings.Join(content, "; "))})
	}
	for _, status := range statuses {
		resp := responses[status]
		ptr := refPointer(resp.Ref, o.ptr+"/responses/"+status) + "/headers"
		for _, name := range ordered(r.idx, ptr, resp.Value.Headers) {
			h := resp.Value.Headers[name].Value
			v.Headers = append(v.Headers, headerRow{status, name, cell(typeText(h.Schema)), yesNo(h.Required), cell(h.Description)})
		}
	}
	for _, status := range statuses {
		resp := responses[status]
		ptr := refPointer(resp.Ref, o.ptr+"/responses/"+status)
		for _, ct := range ordered(r.idx, ptr+"/content", resp.Value.Content) {
			v.Examples = append(v.Examples, r.examples("Example "+status, ct, resp.Value.Content[ct], ptr+"/content/"+escapePointer(ct))...)
		}
	}
	return v
}

// requestBody builds the view of an operation's request body; content
// types sharing a schema show it once.
func (r *reference) requestBody(rb *openapi3.RequestBodyRef, opPtr string) *bodyView {
	ptr := refPointer(rb.Ref, opPtr+"/requestBody")
	cts := ordered(r.idx, ptr+"/content", rb.Value.Content)
	v := &bodyView{Required: rb.Value.Required, Description: rb.Value.Description, ContentTypes: codeList(cts)}
	shown := make(map[*openapi3.Schema]bool)
	for _, ct := range cts {
		mt := rb.Value.Content[ct]
		if mt.Schema == nil || mt.Schema.Value == nil || shown[mt.Schema.Value] {
			continue
		}
		shown[mt.Schema.Value] = true
		v.Schemas = append(v.Schemas, bodySchema{ct, typeText(mt.Schema),
			r.fields(mt.Schema, refPointer(mt.Schema.Ref, ptr+"/content/"+escapePointer(ct)+"/schema"))})
	}
	for _, ct := range cts {
		v.Examples = append(v.Examples, r.examples("Example request", ct, rb.Value.Content[ct], ptr+"/content/"+escapePointer(ct))...)
	}
	return v
}

// examples lists the example and the named examples of one media type.
func (r *reference) examples(label, ct string, mt *openapi3.MediaType, ptr string) []exampleView {
	var out []exampleView
	if mt.Example != nil {
		out = append(out, r.example(label+" (`"+ct+"`)", ct, mt.Example, ptr+"/example"))
	}
	for _, name := range ordered(r.idx, ptr+"/examples", mt.Examples) {
		ex := mt.Examples[name].Value
		heading := label + " (`" + ct + "`), " + name
		if ex.Summary != "" {
			heading += ": " + ex.Summary
		}
		out = append(out, r.example(heading, ct, ex.Value, refPointer(mt.Examples[name].Ref, ptr+"/examples/"+escapePointer(name))+"/value"))
	}
	return out
}

// example is one example: form fields URL-encoded, anything else as JSON,
// as written in the document when its text is at ptr.
func (r *reference) example(heading, ct string, value any, ptr string) exampleView {
	if obj, ok := value.(map[string]any); ok && ct == "application/x-www-form-urlencoded" {
		fields := make([]string, 0, len(obj))
		for _, k := range ordered(r.idx, ptr, obj) {
			fields = append(fields, url.QueryEscape(k)+"="+url.QueryEscape(fmt.Sprint(obj[k])))
		}
		return exampleView{Heading: heading, Text: strings.Join(fields, "&")}
	}
	var text bytes.Buffer
	if raw, ok := r.idx.raw[ptr]; !ok || json.Indent(&text, raw, "", "  ") != nil {
		text.Reset()
		b, err := json.MarshalIndent(value, "", "  ")
		if err != nil {
			b = []byte(fmt.Sprint(value))
		}
		text.Write(b)
	}
	return exampleView{Heading: heading, Lang: "json", Text: text.String()}
}

// errorCatalogue lists every distinct error answer of the document's
// examples (status 400 and above, JSON bodies), in the order of the
// operations and statuses, each with the operations that answer it.
func (r *reference) errorCatalogue(ops []operation) []errorRow {
	var rows []errorRow
	index := map[errorRow]int{} // by status, code and message
	for _, o := range ops {
		responses := o.op.Responses.Map()
		for _, status := range ordered(r.idx, o.ptr+"/responses", responses) {
			if n, err := strconv.Atoi(status); err != nil || n < 400 {
				continue
			}
			mt := responses[status].Value.Content.Get("application/json")
			if mt == nil {
				continue
			}
			values := []any{mt.Example}
			ptr := refPointer(responses[status].Ref, o.ptr+"/responses/"+status) + "/content/" + escapePointer("application/json") + "/examples"
			for _, name := range ordered(r.idx, ptr, mt.Examples) {
				values = append(values, mt.Examples[name].Value.Value)
			}
			for _, v := range values {
				body, ok := v.(map[string]any)
				if !ok {
					continue
				}
				code, _ := body["error"].(string)
				msg, _ := body["error_description"].(string)
				if code == "" {
					msg, _ = body["detail"].(string)
				}
				if msg == "" {
					continue
				}
				key := errorRow{Status: status, Code: code, Message: msg}
				where := o.method + " `" + o.path + "`"
				if i, seen := index[key]; seen {
					if !strings.Contains(rows[i].Where, where) {
						rows[i].Where += ", " + where
					}
					continue
				}
				index[key] = len(rows)
				key.Where = where
				rows = append(rows, key)
			}
		}
	}
	slices.SortStableFunc(rows, func(a, b errorRow) int { return strings.Compare(a.Status, b.Status) })
	for i := range rows {
		rows[i].Message = cell(rows[i].Message)
	}
	return rows
}
