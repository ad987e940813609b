package apidocs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// jsonIndex records, for the JSON pointer (RFC 6901) of every value of a
// JSON document, the keys of objects in the order written and the raw text.
// The loaded openapi3.T keeps objects in Go maps, so the reference takes its
// order of paths, responses and fields, and the text of its examples, from
// here: as the document's author wrote them.
type jsonIndex struct {
	keys map[string][]string
	raw  map[string][]byte
}

// indexJSON builds the jsonIndex of data.
func indexJSON(data []byte) (*jsonIndex, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	idx := &jsonIndex{keys: make(map[string][]string), raw: make(map[string][]byte)}
	var walk func(ptr string) error
	walk = func(ptr string) error {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if delim, ok := tok.(json.Delim); ok {
			switch delim {
			case '{':
				keys := []string{}
				for dec.More() {
					tok, err := dec.Token()
					if err != nil {
						return err
					}
					key := tok.(string) // object keys are always strings
					keys = append(keys, key)
					if err := walk(ptr + "/" + escapePointer(key)); err != nil {
						return err
					}
				}
				idx.keys[ptr] = keys
			case '[':
				for i := 0; dec.More(); i++ {
					if err := walk(ptr + "/" + strconv.Itoa(i)); err != nil {
						return err
					}
				}
			}
			if _, err := dec.Token(); err != nil { // the closing delimiter
				return err
			}
		}
		// InputOffset is the end of the previous token: skip the separator.
		idx.raw[ptr] = bytes.TrimLeft(data[start:dec.InputOffset()], " \t\r\n:,")
		return nil
	}
	if err := walk(""); err != nil {
		return nil, err
	}
	return idx, nil
}

// escapePointer escapes a key as a JSON pointer reference token (RFC 6901,
// section 3).
func escapePointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// ordered returns the keys of m in the order recorded for the object at ptr,
// followed by any keys not recorded there, sorted.
func ordered[V any](idx *jsonIndex, ptr string, m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for _, k := range idx.keys[ptr] {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	var rest []string
	for k := range m {
		if !slices.Contains(keys, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	return append(keys, rest...)
}

// refPointer returns the JSON pointer a local "$ref" names, or fallback when
// ref is empty or not local.
func refPointer(ref, fallback string) string {
	if p, ok := strings.CutPrefix(ref, "#"); ok {
		return p
	}
	return fallback
}

// reference renders the API reference of one OpenAPI document.
type reference struct {
	doc *openapi3.T
	idx *jsonIndex
	b   bytes.Buffer
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

	fmt.Fprintf(&r.b, "# %s\n\n", title)
	fmt.Fprintf(&r.b, "%s, version %s. Generated from the OpenAPI %s document served at `GET /api/v1/schema/?format=json`; the two never disagree. ",
		doc.Info.Title, doc.Info.Version, doc.OpenAPI)
	r.b.WriteString("All paths are relative to the base address `{base_url}`.\n\n")
	if doc.Info.Description != "" {
		r.b.WriteString(doc.Info.Description + "\n\n")
	}

	r.b.WriteString("## Endpoints\n\n| Method | Path | Summary | Authentication |\n|---|---|---|---|\n")
	for _, o := range ops {
		fmt.Fprintf(&r.b, "| %s | `%s` | %s | %s |\n", o.method, o.path, cell(o.op.Summary), cell(r.securityShort(o.op)))
	}
	r.b.WriteString("\n")

	r.writeSecuritySchemes()

	done := make(map[*openapi3.Operation]bool)
	for _, tag := range doc.Tags {
		var tagged []operation
		for _, o := range ops {
			if len(o.op.Tags) > 0 && o.op.Tags[0] == tag.Name {
				tagged = append(tagged, o)
			}
		}
		if len(tagged) == 0 {
			continue
		}
		fmt.Fprintf(&r.b, "## %s\n\n", tag.Name)
		if tag.Description != "" {
			r.b.WriteString(tag.Description + "\n\n")
		}
		for _, o := range tagged {
			r.writeOperation(o)
			done[o.op] = true
		}
	}
	var other []operation
	for _, o := range ops {
		if !done[o.op] {
			other = append(other, o)
		}
	}
	if len(other) > 0 {
		r.b.WriteString("## Other endpoints\n\n")
		for _, o := range other {
			r.writeOperation(o)
		}
	}

	r.writeSchemas()
	return bytes.TrimRight(r.b.Bytes(), "\n")
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

func (r *reference) writeSecuritySchemes() {
	if r.doc.Components == nil || len(r.doc.Components.SecuritySchemes) == 0 {
		return
	}
	schemes := r.doc.Components.SecuritySchemes
	r.b.WriteString("## Authentication schemes\n\n| Name | Type | Description |\n|---|---|---|\n")
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
		fmt.Fprintf(&r.b, "| `%s` | %s | %s |\n", name, kind, cell(s.Description))
	}
	r.b.WriteString("\n")
	for _, name := range names {
		s := schemes[name].Value
		if s.Flows == nil {
			continue
		}
		flows := []struct {
			key  string
			flow *openapi3.OAuthFlow
		}{
			{"clientCredentials", s.Flows.ClientCredentials},
			{"authorizationCode", s.Flows.AuthorizationCode},
			{"implicit", s.Flows.Implicit},
			{"password", s.Flows.Password},
		}
		for _, f := range flows {
			if f.flow == nil {
				continue
			}
			fmt.Fprintf(&r.b, "### `%s`: flow `%s`\n\n", name, f.key)
			if f.flow.TokenURL != "" {
				fmt.Fprintf(&r.b, "Token URL: `%s`.\n\n", f.flow.TokenURL)
			}
			if len(f.flow.Scopes) > 0 {
				r.b.WriteString("| Scope | Description |\n|---|---|\n")
				ptr := "/components/securitySchemes/" + escapePointer(name) + "/flows/" + f.key + "/scopes"
				for _, scope := range ordered(r.idx, ptr, f.flow.Scopes) {
					fmt.Fprintf(&r.b, "| `%s` | %s |\n", scope, cell(f.flow.Scopes[scope]))
				}
				r.b.WriteString("\n")
			}
		}
	}
}

func (r *reference) writeOperation(o operation) {
	op := o.op
	fmt.Fprintf(&r.b, "### %s %s\n\n", o.method, o.path)
	if op.Summary != "" {
		fmt.Fprintf(&r.b, "**%s**", op.Summary)
		if op.OperationID != "" {
			fmt.Fprintf(&r.b, " (operation `%s`)", op.OperationID)
		}
		r.b.WriteString("\n\n")
	}
	if op.Description != "" {
		r.b.WriteString(op.Description + "\n\n")
	}

	reqs := r.securityRequirements(op)
	switch len(reqs) {
	case 0:
		r.b.WriteString("Authentication: none.\n\n")
	case 1:
		fmt.Fprintf(&r.b, "Authentication: %s.\n\n", requirementText(reqs[0]))
	default:
		alts := make([]string, 0, len(reqs))
		for _, req := range reqs {
			alts = append(alts, requirementText(req))
		}
		fmt.Fprintf(&r.b, "Authentication, any one of: %s.\n\n", strings.Join(alts, "; "))
	}

	if len(op.Parameters) > 0 {
		r.b.WriteString("#### Parameters\n\n| Name | In | Type | Required | Description |\n|---|---|---|---|---|\n")
		for _, p := range op.Parameters {
			v := p.Value
			fmt.Fprintf(&r.b, "| `%s` | %s | %s | %s | %s |\n", v.Name, v.In, cell(typeText(v.Schema)), yesNo(v.Required), cell(v.Description))
		}
		r.b.WriteString("\n")
	}

	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		ptr := refPointer(rb.Ref, o.ptr+"/requestBody")
		r.b.WriteString("#### Request body\n\n")
		if rb.Value.Required {
			r.b.WriteString("Required. ")
		} else {
			r.b.WriteString("Optional. ")
		}
		if rb.Value.Description != "" {
			r.b.WriteString(rb.Value.Description + " ")
		}
		cts := ordered(r.idx, ptr+"/content", rb.Value.Content)
		fmt.Fprintf(&r.b, "Content types: %s.\n\n", codeList(cts))
		// Content types sharing a schema are shown once.
		shown := make(map[*openapi3.Schema]bool)
		for _, ct := range cts {
			mt := rb.Value.Content[ct]
			if mt.Schema == nil || mt.Schema.Value == nil || shown[mt.Schema.Value] {
				continue
			}
			shown[mt.Schema.Value] = true
			fmt.Fprintf(&r.b, "Schema of `%s`: %s.\n\n", ct, typeText(mt.Schema))
			r.writeFields(mt.Schema, refPointer(mt.Schema.Ref, ptr+"/content/"+escapePointer(ct)+"/schema"))
		}
		for _, ct := range cts {
			r.writeExamples("Example request", ct, rb.Value.Content[ct], ptr+"/content/"+escapePointer(ct))
		}
	}

	responses := op.Responses.Map()
	statuses := ordered(r.idx, o.ptr+"/responses", responses)
	r.b.WriteString("#### Responses\n\n| Status | Description | Content |\n|---|---|---|\n")
	for _, status := range statuses {
		resp := responses[status].Value
		var content []string
		for _, ct := range ordered(r.idx, refPointer(responses[status].Ref, o.ptr+"/responses/"+status)+"/content", resp.Content) {
			c := "`" + ct + "`"
			if s := resp.Content[ct].Schema; s != nil {
				c += ": " + typeText(s)
			}
			content = append(content, c)
		}
		desc := ""
		if resp.Description != nil {
			desc = *resp.Description
		}
		fmt.Fprintf(&r.b, "| %s | %s | %s |\n", status, cell(desc), cell(strings.Join(content, "; ")))
	}
	r.b.WriteString("\n")

	var headerRows []string
	for _, status := range statuses {
		resp := responses[status]
		ptr := refPointer(resp.Ref, o.ptr+"/responses/"+status) + "/headers"
		for _, name := range ordered(r.idx, ptr, resp.Value.Headers) {
			h := resp.Value.Headers[name].Value
			headerRows = append(headerRows, fmt.Sprintf("| %s | `%s` | %s | %s | %s |\n",
				status, name, cell(typeText(h.Schema)), yesNo(h.Required), cell(h.Description)))
		}
	}
	if len(headerRows) > 0 {
		r.b.WriteString("#### Response headers\n\n| Status | Header | Type | Always sent | Description |\n|---|---|---|---|---|\n")
		r.b.WriteString(strings.Join(headerRows, ""))
		r.b.WriteString("\n")
	}

	for _, status := range statuses {
		resp := responses[status]
		ptr := refPointer(resp.Ref, o.ptr+"/responses/"+status)
		for _, ct := range ordered(r.idx, ptr+"/content", resp.Value.Content) {
			r.writeExamples("Example "+status, ct, resp.Value.Content[ct], ptr+"/content/"+escapePointer(ct))
		}
	}
}

// writeExamples writes the example and the named examples of one media type.
func (r *reference) writeExamples(label, ct string, mt *openapi3.MediaType, ptr string) {
	if mt.Example != nil {
		r.writeExample(label+" (`"+ct+"`)", ct, mt.Example, ptr+"/example")
	}
	for _, name := range ordered(r.idx, ptr+"/examples", mt.Examples) {
		ex := mt.Examples[name].Value
		heading := label + " (`" + ct + "`), " + name
		if ex.Summary != "" {
			heading += ": " + ex.Summary
		}
		r.writeExample(heading, ct, ex.Value, refPointer(mt.Examples[name].Ref, ptr+"/examples/"+escapePointer(name))+"/value")
	}
}

// writeExample writes one example: form fields URL-encoded, anything else as
// JSON, as written in the document when its text is at ptr.
func (r *reference) writeExample(heading, ct string, value any, ptr string) {
	fmt.Fprintf(&r.b, "%s:\n\n", heading)
	if obj, ok := value.(map[string]any); ok && ct == "application/x-www-form-urlencoded" {
		fields := make([]string, 0, len(obj))
		for _, k := range ordered(r.idx, ptr, obj) {
			fields = append(fields, url.QueryEscape(k)+"="+url.QueryEscape(fmt.Sprint(obj[k])))
		}
		fmt.Fprintf(&r.b, "```\n%s\n```\n\n", strings.Join(fields, "&"))
		return
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
	fmt.Fprintf(&r.b, "```json\n%s\n```\n\n", text.Bytes())
}

func (r *reference) writeSchemas() {
	if r.doc.Components == nil || len(r.doc.Components.Schemas) == 0 {
		return
	}
	schemas := r.doc.Components.Schemas
	r.b.WriteString("## Schemas\n\n")
	for _, name := range ordered(r.idx, "/components/schemas", schemas) {
		s := schemas[name]
		fmt.Fprintf(&r.b, "### %s\n\n", name)
		if s.Value.Description != "" {
			r.b.WriteString(s.Value.Description + "\n\n")
		}
		if isObject(s.Value) {
			r.writeFields(s, "/components/schemas/"+escapePointer(name))
		} else {
			fmt.Fprintf(&r.b, "Type: %s.\n\n", constraintText(s.Value))
		}
	}
}

// writeFields writes the fields table of an object schema, the fields of
// nested inline objects as "parent.child" rows.
func (r *reference) writeFields(s *openapi3.SchemaRef, ptr string) {
	var rows []string
	closed := r.fieldRows(s, ptr, "", &rows)
	if len(rows) == 0 {
		return
	}
	r.b.WriteString("| Field | Type | Required | Description |\n|---|---|---|---|\n")
	r.b.WriteString(strings.Join(rows, ""))
	r.b.WriteString("\n")
	if closed {
		r.b.WriteString("No other fields are allowed.\n\n")
	}
}

// fieldRows appends a table row for each property of s, prefixed with
// prefix, and reports whether s forbids other properties.
func (r *reference) fieldRows(s *openapi3.SchemaRef, ptr, prefix string, rows *[]string) bool {
	v := s.Value
	for _, name := range ordered(r.idx, ptr+"/properties", v.Properties) {
		prop := v.Properties[name]
		desc := prop.Value.Description
		*rows = append(*rows, fmt.Sprintf("| `%s%s` | %s | %s | %s |\n",
			prefix, name, cell(typeText(prop)), yesNo(slices.Contains(v.Required, name)), cell(desc)))
		if prop.Ref == "" && isObject(prop.Value) && len(prop.Value.Properties) > 0 {
			r.fieldRows(prop, ptr+"/properties/"+escapePointer(name), prefix+name+".", rows)
		}
	}
	return v.AdditionalProperties.Has != nil && !*v.AdditionalProperties.Has
}

// typeText describes the type of a schema: a link for a component object
// schema, otherwise the type with its constraints.
func typeText(s *openapi3.SchemaRef) string {
	if s == nil || s.Value == nil {
		return "any"
	}
	if name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/"); ok {
		link := "[" + name + "](#" + strings.ToLower(name) + ")"
		if isObject(s.Value) {
			return link
		}
		return constraintText(s.Value) + " (" + link + ")"
	}
	return constraintText(s.Value)
}

// constraintText describes a schema's type, format and constraints.
func constraintText(v *openapi3.Schema) string {
	t := "any"
	if v.Type != nil && len(v.Type.Slice()) > 0 {
		t = strings.Join(v.Type.Slice(), " or ")
	}
	if v.Type.Is("array") {
		t = "array of " + typeText(v.Items)
	}
	if v.Format != "" {
		t += " (" + v.Format + ")"
	}
	parts := []string{t}
	if len(v.Enum) > 0 {
		values := make([]string, len(v.Enum))
		for i, e := range v.Enum {
			values[i] = literal(e)
		}
		if len(values) == 1 {
			parts = append(parts, "always "+values[0])
		} else {
			parts = append(parts, "one of "+strings.Join(values, ", "))
		}
	}
	if v.Const != nil {
		parts = append(parts, "always "+literal(v.Const))
	}
	if v.Pattern != "" {
		parts = append(parts, "pattern `"+v.Pattern+"`")
	}
	if v.Min != nil {
		parts = append(parts, "minimum "+strconv.FormatFloat(*v.Min, 'f', -1, 64))
	}
	if v.Max != nil {
		parts = append(parts, "maximum "+strconv.FormatFloat(*v.Max, 'f', -1, 64))
	}
	if v.UniqueItems {
		parts = append(parts, "unique items")
	}
	if v.Default != nil {
		parts = append(parts, "default "+literal(v.Default))
	}
	return strings.Join(parts, ", ")
}

// literal renders a JSON value in code style, strings without quotes.
func literal(v any) string {
	if s, ok := v.(string); ok {
		return "`" + s + "`"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "`" + fmt.Sprint(v) + "`"
	}
	return "`" + string(b) + "`"
}

func isObject(v *openapi3.Schema) bool {
	return v != nil && (v.Type.Is("object") || (v.Type == nil && len(v.Properties) > 0))
}

func codeList(items []string) string {
	quoted := make([]string, len(items))
	for i, s := range items {
		quoted[i] = "`" + s + "`"
	}
	return strings.Join(quoted, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// cell makes text safe inside a Markdown table cell.
func cell(text string) string {
	text = strings.ReplaceAll(text, "|", `\|`)
	return strings.Join(strings.Fields(text), " ")
}
