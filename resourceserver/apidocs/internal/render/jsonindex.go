package render

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
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
