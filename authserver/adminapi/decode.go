package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/partnerapi/authplatform/pkg/jsonmembers"
)

// decode is the one JSON decoder of every admin request body: it reads a
// JSON object into v and refuses what encoding/json would let through with
// a guess. Refused: unknown members, a member given twice at any depth
// (encoding/json keeps the last; RFC 8259 section 4 leaves duplicates
// undefined, so one reader and another could act on different values), a
// member named in another case than the documented one ("SLUG" for
// "slug": encoding/json matches names case-insensitively), a second value
// and trailing bytes. The token endpoint refuses a repeated parameter
// alike (RFC 6749 section 3.1). A body nested more than MaxDepth deep is
// refused before any of that, in one pass over its bytes
// (jsonmembers.DepthWithin): the member check walks the value, and its
// cost must stay linear in the body's size (TestDecodeHostileBodies).
func decode(body []byte, v any) error {
	if len(body) == 0 {
		return invalid("a JSON object body is required")
	}
	if !jsonmembers.DepthWithin(body, MaxDepth) {
		return invalid(fmt.Sprintf("the body nests arrays and objects more than %d deep", MaxDepth))
	}
	var unknown string
	if err := checkMembers(json.NewDecoder(bytes.NewReader(body)), reflect.TypeOf(v), nil, &unknown); err != nil {
		var p *problem
		if errors.As(err, &p) {
			return p
		}
		return invalid("the body is not valid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syntax):
			return invalid("the body is not valid JSON")
		case errors.As(err, &typ):
			return invalid(fmt.Sprintf("member %q must be a %s", typ.Field, typ.Type))
		case unknown != "":
			// What encoding/json refuses with DisallowUnknownFields, in
			// its words: the first member no field takes.
			return invalid(fmt.Sprintf("the body does not fit: json: unknown field %q", unknown))
		default:
			return invalid("the body does not fit")
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("the body must hold one JSON object")
	}
	return nil
}

// MaxDepth is how deep the arrays and objects of an admin request body may
// nest (the outermost object is depth 1). No request of this API needs
// more than 5 (a JWK set's keys' x5c); deploy/docs/operator-guide.md
// (Bodies) and the OpenAPI document state the limit.
const MaxDepth = 32

// where names a value inside the body, for a problem's detail, as a chain
// from the value up to the body: the name is written out only when a
// problem quotes it, so walking a body costs nothing per level.
type where struct {
	up    *where
	name  string // a member's name; or
	index int    // an element's index, when name is ""
	elem  bool
}

// String is the path as a detail quotes it: "jwks.keys[0].kid".
func (w *where) String() string {
	if w == nil {
		return ""
	}
	up := w.up.String()
	switch {
	case w.elem:
		return up + "[" + strconv.Itoa(w.index) + "]"
	case up == "":
		return w.name
	default:
		return up + "." + w.name
	}
}

// checkMembers reads one JSON value from dec and refuses a member repeated
// in any object, and, where the value maps onto a struct (t), a member
// whose name matches a field's only when case is ignored. at names the
// value in the problem's detail (nil for the body itself). The first member
// that no field takes at all is left in *unknown (its name alone, as
// encoding/json names it), for decode to report if Decode refuses it.
// Other errors are syntax errors, for the caller to report.
func checkMembers(dec *json.Decoder, t reflect.Type, at *where, unknown *string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		fields := jsonFields(t)
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			name, _ := tok.(string)
			member := &where{up: at, name: name}
			if seen[name] {
				return invalid(fmt.Sprintf("member %q is given twice", member))
			}
			seen[name] = true
			var ft reflect.Type
			if fields != nil {
				var ok bool
				if ft, ok = fields[name]; !ok {
					for known := range fields {
						if strings.EqualFold(known, name) {
							return invalid(fmt.Sprintf("member %q is not known; names are case-sensitive: %q", member, &where{up: at, name: known}))
						}
					}
					if *unknown == "" {
						*unknown = name
					}
				}
			} else if t != nil && t.Kind() == reflect.Map {
				ft = t.Elem()
			}
			if err := checkMembers(dec, ft, member, unknown); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		var et reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t != rawMessage {
			et = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := checkMembers(dec, et, &where{up: at, index: i, elem: true}, unknown); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

var rawMessage = reflect.TypeFor[json.RawMessage]()

// jsonFields returns the member names of a struct type as encoding/json
// names them (embedded structs' fields included), with their types; nil
// when t is not a struct.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			for n, typ := range jsonFields(ft) {
				out[n] = typ
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
