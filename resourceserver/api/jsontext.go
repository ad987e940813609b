package api

import "unicode/utf8"

// appendJSONString appends s as a JSON string (RFC 8259 section 7), byte
// for byte as encoding/json writes a string with SetEscapeHTML(false)
// (writeJSON's encoder): '"' and '\\' escaped, \b \f \n \r \t as such, the
// other control characters as \u00XX, invalid UTF-8 as \ufffd and U+2028
// and U+2029 as \u2028 and \u2029; everything else as it is.
//
// Written by hand, not left to encoding/json, for GET /api/v1/me/, which
// answers every API call: writing its body cost 3.7 µs of the
// resourceserver's 80 µs of CPU per call under the load harness on a 3 x 1
// Cluster (deploy/bench/RESULTS.md, the profile of 2026-11-29 21:54 UTC),
// and BenchmarkMeBody measures the encoder at 670-860 ns and an
// allocation, the hand-written text at 150-170 ns and none. TestJSONText and
// FuzzJSONText hold it to encoding/json's output.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
