package jsonmembers

import (
	"encoding/json"
	"strings"
)

// Strict reports whether obj is a JSON object of at most max members, no two of whose names are equal under Unicode case folding, and
// none of which is a case variant of a name in exact. encoding/json keeps
// the last of two equal names and matches names case-insensitively, so
// without this {"htm":"GET","HTM":"POST"} or a lone "Htu" would decode, and
// which value counts would differ between parsers. Nothing may follow the
// object. It is the one rule of access tokens (pkg/accesstoken: header,
// claims, cnf) and DPoP proofs (pkg/dpop: header, claims, jwk).
//
// It runs on every proof and every uncached token, so it does not use
// json.Decoder's Token, which allocates for every member:
// json.Valid checks the syntax without allocating, then the members' names
// are read by a scanner that only has to find them in valid JSON.
func Strict(obj []byte, exact []string, max int) bool {
	if !json.Valid(obj) {
		return false
	}
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	var seenBuf [32]string // no allocation up to 32 members
	seen := seenBuf[:0]
	i = skipSpace(obj, i+1)
	if obj[i] == '}' {
		return true
	}
	for {
		// obj[i] is the '"' of a member name (the JSON is valid).
		end := stringEnd(obj, i)
		name, ok := memberName(obj[i:end])
		if !ok || len(seen) == max {
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
		i = skipSpace(obj, end) // at ':'
		i = skipValue(obj, i+1) // after the value
		i = skipSpace(obj, i)   // at ',' or '}'
		if obj[i] == '}' {
			return true
		}
		i = skipSpace(obj, i+1) // at the next name
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped character; \uXXXX's digits are plain
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// memberName decodes a quoted member name; one without escapes is its
// bytes between the quotes.
func memberName(quoted []byte) (string, bool) {
	inner := quoted[1 : len(quoted)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(quoted, &s); err != nil {
				return "", false
			}
			return s, true
		}
	}
	return string(inner), true
}

// skipValue returns the index after the value that starts at or after
// b[i]: a string, an object or array (nested to any depth), or a literal.
func skipValue(b []byte, i int) int {
	i = skipSpace(b, i)
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			i = stringEnd(b, i)
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // the end of the enclosing object
			}
		case ',':
			if depth == 0 {
				return i
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}

// DepthWithin reports whether no array or object in b is nested more than
// max deep (the outermost value is depth 1). It is one pass over the bytes
// that allocates nothing, so a body can be measured before any decoder
// sees it: encoding/json's own limit is 10,000 levels, and a reader that
// walks the value (the admin API's member check) pays for every level
// again at each member. Brackets inside strings do not count. It does not
// check the syntax; b need not be valid JSON. (Its cost is measured by
// TestDepthWithinLinear.)
func DepthWithin(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i) - 1
		case '[', '{':
			depth++
			if depth > max {
				return false
			}
		case ']', '}':
			depth--
		}
	}
	return true
}
