package luascript

import "strings"

// skipNoise returns the offset just past the comment or string literal that
// starts at text[i], and true; or i and false when none starts there. It
// knows Lua 5.1's forms: -- to the end of the line, --[[ ]] and --[==[ ]==]
// long comments, '...' and "..." with backslash escapes, and [[ ]] long
// strings. An unterminated one runs to the end of the text.
func skipNoise(text string, i int) (int, bool) {
	switch {
	case strings.HasPrefix(text[i:], "--"):
		if n, ok := longBracket(text, i+2); ok {
			return n, true
		}
		if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
			return i + j, true
		}
		return len(text), true
	case text[i] == '\'' || text[i] == '"':
		q := text[i]
		for j := i + 1; j < len(text); j++ {
			switch text[j] {
			case '\\':
				j++
			case q, '\n':
				return j + 1, true
			}
		}
		return len(text), true
	case text[i] == '[':
		return longBracket(text, i)
	}
	return i, false
}

// longBracket returns the offset past a long bracket ([[ ]] or [=[ ]=])
// that opens at text[i], and true; i and false when none opens there.
func longBracket(text string, i int) (int, bool) {
	if i >= len(text) || text[i] != '[' {
		return i, false
	}
	j := i + 1
	for j < len(text) && text[j] == '=' {
		j++
	}
	if j >= len(text) || text[j] != '[' {
		return i, false
	}
	closer := "]" + strings.Repeat("=", j-i-1) + "]"
	if k := strings.Index(text[j+1:], closer); k >= 0 {
		return j + 1 + k + len(closer), true
	}
	return len(text), true
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// identifiers calls f with the start and end of every identifier (or
// keyword) of text outside comments and strings, in order; f returns the
// offset to go on scanning from (end, or further).
func identifiers(text string, f func(start, end int) int) {
	for i := 0; i < len(text); {
		if n, ok := skipNoise(text, i); ok {
			i = n
			continue
		}
		c := text[i]
		if !isIdentByte(c) {
			i++
			continue
		}
		j := i
		for j < len(text) && isIdentByte(text[j]) {
			j++
		}
		if c >= '0' && c <= '9' { // a number (1e5, 0x1F)
			i = j
			continue
		}
		i = f(i, j)
	}
}

// lineOf is the 1-based line of offset i of text.
func lineOf(text string, i int) int { return 1 + strings.Count(text[:i], "\n") }
