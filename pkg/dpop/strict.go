package dpop

import (
	"bytes"
	"encoding/json"
	"strings"
)

// strictObject reports whether obj is a JSON object of at most maxMembers
// members, no two of whose names are equal under Unicode case folding, and
// none of which is a case variant of a name in exact. encoding/json keeps
// the last of two equal names and matches names case-insensitively, so
// without this {"htm":"GET","HTM":"POST"} or a lone "Htu" would decode, and
// which value counts would differ between parsers. It is the rule
// pkg/accesstoken applies to access tokens.
func strictObject(obj []byte, exact []string) bool {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	var seenBuf [maxMembers]string
	seen := seenBuf[:0]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		name, ok := tok.(string)
		if !ok || len(seen) == maxMembers {
			return false
		}
		for _, s := range seen {
			if strings.EqualFold(s, name) {
				return false
			}
		}
		for _, e := range exact {
			if name != e && strings.EqualFold(name, e) {
				return false
			}
		}
		seen = append(seen, name)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	if _, err := dec.Token(); err != nil {
		return false
	}
	// Nothing after the object.
	_, err := dec.Token()
	return err != nil
}
