package render

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// schemas lists the component schemas.
func (r *reference) schemas() []schemaView {
	if r.doc.Components == nil {
		return nil
	}
	schemas := r.doc.Components.Schemas
	var out []schemaView
	for _, name := range ordered(r.idx, "/components/schemas", schemas) {
		s := schemas[name]
		v := schemaView{Name: name, Description: s.Value.Description}
		if isObject(s.Value) {
			v.Fields = r.fields(s, "/components/schemas/"+escapePointer(name))
		} else {
			v.Type = constraintText(s.Value)
		}
		out = append(out, v)
	}
	return out
}

// fields builds the fields table of an object schema, the fields of nested
// inline objects as "parent.child" rows.
func (r *reference) fields(s *openapi3.SchemaRef, ptr string) *fieldsView {
	v := &fieldsView{}
	v.Closed = r.fieldRows(s, ptr, "", &v.Rows)
	return v
}

// fieldRows appends a row for each property of s, prefixed with prefix, and
// reports whether s forbids other properties.
func (r *reference) fieldRows(s *openapi3.SchemaRef, ptr, prefix string, rows *[]fieldRow) bool {
	v := s.Value
	for _, name := range ordered(r.idx, ptr+"/properties", v.Properties) {
		prop := v.Properties[name]
		*rows = append(*rows, fieldRow{prefix + name, cell(typeText(prop)), yesNo(slices.Contains(v.Required, name)), cell(prop.Value.Description)})
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
