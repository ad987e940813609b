package jsontext

import "unicode/utf8"

// AppendString appends s to b as a JSON string (RFC 8259 section 7), as
// encoding/json writes a string without HTML escaping
// (Encoder.SetEscapeHTML(false)): '"' and '\\' escaped, \b \f \n \r \t as
// such, the other control characters as \u00XX, invalid UTF-8 as \ufffd
// (one per bad byte), U+2028 and U+2029 as \u2028 and \u2029 (JavaScript
// reads them as line ends); everything else as it is. TestAppendString and
// FuzzAppendString hold it to encoding/json.
func AppendString(b []byte, s string) []byte { return appendString(b, s, false) }

// AppendHTMLString is AppendString with encoding/json's default HTML
// escaping (json.Marshal's): '<', '>' and '&' as \u003c, \u003e and
// \u0026 besides.
func AppendHTMLString(b []byte, s string) []byte { return appendString(b, s, true) }

func appendString(b []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
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
