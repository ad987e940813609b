package luascript

import (
	"fmt"
	"regexp"
	"strings"
)

// inlineMark ends the line of a generated reply builder (Contract), which
// New inlines: the builder's definition becomes a comment and each call
// reply(x, y) becomes the table it would return, {x, y or 0, 0, ...}, on
// the same lines (so error line numbers do not move). A Lua function call
// costs Redis about as much as fifteen arithmetic operations (see
// window.lua's wl_rec), and a script answers through its builder on every
// request; the table is the same. An argument is one value: a call as the
// last argument, which a function call would spread over the remaining
// parameters, gives its first value only.
const inlineMark = " -- luacontract:inline"

// builderLine matches a generated builder's line: its name, parameters and
// the elements of the table it returns.
var builderLine = regexp.MustCompile(`^local function ([a-z_]+)\(([a-z_, ]*)\) return \{(.*)\} end` + regexp.QuoteMeta(inlineMark) + `$`)

// builder is a parsed reply builder: for parameter i, the default its
// element falls back on (elems[i] is "NAME or DEFAULT"), or "" when it has
// none (the code: a call must pass it).
type builder struct {
	name     string
	params   []string
	defaults []string
}

// findBuilder returns the builder that text defines and the offsets of its
// line, or nil.
func findBuilder(text string) (*builder, int, int, error) {
	i := strings.Index(text, inlineMark+"\n")
	if i < 0 {
		return nil, 0, 0, nil
	}
	start := strings.LastIndexByte(text[:i], '\n') + 1
	end := i + len(inlineMark)
	m := builderLine.FindStringSubmatch(text[start:end])
	if m == nil {
		return nil, 0, 0, fmt.Errorf("line %d: a luacontract:inline line that is not a reply builder", lineOf(text, start))
	}
	b := &builder{name: m[1], params: strings.Split(m[2], ", ")}
	elems := strings.Split(m[3], ", ")
	if len(elems) != len(b.params) {
		return nil, 0, 0, fmt.Errorf("line %d: builder %s of %d parameters returns %d values", lineOf(text, start), b.name, len(b.params), len(elems))
	}
	for i, e := range elems {
		p := b.params[i]
		switch {
		case e == p:
			b.defaults = append(b.defaults, "")
		case strings.HasPrefix(e, p+" or "):
			b.defaults = append(b.defaults, strings.TrimPrefix(e, p+" or "))
		default:
			return nil, 0, 0, fmt.Errorf("line %d: builder %s: element %q", lineOf(text, start), b.name, e)
		}
	}
	return b, start, end, nil
}

// inline replaces every call of b in text with its table.
func (b *builder) inline(text string) (string, error) {
	var out strings.Builder
	last := 0
	var err error
	identifiers(text, func(start, end int) int {
		if err != nil || text[start:end] != b.name {
			return end
		}
		p := start - 1
		for p >= 0 && (text[p] == ' ' || text[p] == '\t') {
			p--
		}
		if isField(text, p) {
			return end // a field or method of that name
		}
		open := end
		for open < len(text) && (text[open] == ' ' || text[open] == '\t') {
			open++
		}
		if open+1 < len(text) && text[open] == '=' && text[open+1] != '=' {
			return end // a table's field of that name ({reply = 1})
		}
		if open >= len(text) || text[open] != '(' {
			err = fmt.Errorf("line %d: %s not called (it is inlined: only calls may name it)", lineOf(text, start), b.name)
			return end
		}
		args, close, aerr := splitArgs(text, open)
		if aerr != nil {
			err = fmt.Errorf("line %d: %s(...): %w", lineOf(text, start), b.name, aerr)
			return end
		}
		table, terr := b.table(args)
		if terr != nil {
			err = fmt.Errorf("line %d: %w", lineOf(text, start), terr)
			return end
		}
		out.WriteString(text[last:start])
		out.WriteString(table)
		last = close + 1
		return close + 1
	})
	if err != nil {
		return "", err
	}
	out.WriteString(text[last:])
	return out.String(), nil
}

// table is the table constructor a call with args returns. Each argument
// keeps the white space around it, so the table spans the call's lines.
func (b *builder) table(args []string) (string, error) {
	if len(args) > len(b.params) {
		return "", fmt.Errorf("%s(...) of %d arguments, the reply has %d fields", b.name, len(args), len(b.params))
	}
	var out strings.Builder
	out.WriteString("{")
	for i, d := range b.defaults {
		if i > 0 {
			out.WriteString(",")
		}
		if i >= len(args) {
			if d == "" {
				return "", fmt.Errorf("%s(...) without %s", b.name, b.params[i])
			}
			out.WriteString(" " + d)
			continue
		}
		raw := args[i]
		core := strings.TrimSpace(raw)
		lead := raw[:len(raw)-len(strings.TrimLeft(raw, " \t\n"))]
		trail := raw[len(strings.TrimRight(raw, " \t\n")):]
		if d != "" && !isConstant(core) {
			core += " or " + d
		}
		out.WriteString(lead + core + trail)
	}
	out.WriteString("}")
	return out.String(), nil
}

// isField reports whether text[p] (the character before a name, white
// space skipped) makes the name a field or a method: '.' or ':', but not
// the concatenation operator '..'.
func isField(text string, p int) bool {
	if p < 0 {
		return false
	}
	return text[p] == ':' || text[p] == '.' && (p == 0 || text[p-1] != '.')
}

var constant = regexp.MustCompile(`^(-?[0-9]+|'[^'\\]*'|[A-Z][A-Z0-9_]*)$`)

// isConstant reports whether a builder's argument is a number, a plain
// string or an upper-case name (a code): never nil, so its element needs no
// default.
func isConstant(arg string) bool { return constant.MatchString(arg) }

// splitArgs splits the argument list whose '(' is text[open] at its
// top-level commas; it returns the arguments, with the white space around
// them, and the offset of the closing ')'.
func splitArgs(text string, open int) ([]string, int, error) {
	var args []string
	depth, from := 0, open+1
	for i := open + 1; i < len(text); {
		if n, ok := skipNoise(text, i); ok {
			if strings.HasPrefix(text[i:], "--") {
				return nil, 0, fmt.Errorf("a comment inside the call")
			}
			i = n
			continue
		}
		switch text[i] {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			if depth == 0 {
				if a := text[from:i]; strings.TrimSpace(a) != "" || len(args) > 0 {
					args = append(args, a)
				}
				for _, a := range args {
					if strings.TrimSpace(a) == "" {
						return nil, 0, fmt.Errorf("an empty argument")
					}
				}
				return args, i, nil
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, text[from:i])
				from = i + 1
			}
		}
		i++
	}
	return nil, 0, fmt.Errorf("no closing parenthesis")
}

// bindingLine matches a generated section's binding of a name to a key,
// an argument or a code's value.
var bindingLine = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*) = (KEYS\[[0-9]+\]|ARGV\[[0-9]+\]|-?[0-9]+)( -- .*)?$`)

// bindings returns the names a file's generated section binds (k_NAME to
// KEYS[i], a_NAME to ARGV[i], a code to its value), and the text with
// each binding's line commented out. A binding's local would cost Redis a
// global lookup and an index per key and argument on every run, whether
// the path taken reads it or not: 1.6% more instructions per run of
// authenticate.lua than its positional form, by callgrind's count of a
// redis-server running BenchmarkAuthenticateToken (pkg/clients); resolved
// here, with the builder inlined, 1.3% fewer. The body reads KEYS[i] where
// it names k_NAME, as a script written by hand would.
func bindings(text string) (map[string]string, string) {
	begin := strings.Index(text, SectionBegin+"\n")
	if begin < 0 {
		return nil, text
	}
	end := strings.Index(text[begin:], "\n"+SectionEnd+"\n")
	if end < 0 {
		return nil, text
	}
	end += begin
	lines := strings.Split(text[begin:end], "\n")
	names := map[string]string{}
	for i, l := range lines {
		if m := bindingLine.FindStringSubmatch(l); m != nil {
			names[m[1]] = m[2]
			lines[i] = "-- " + l
		}
	}
	return names, text[:begin] + strings.Join(lines, "\n") + text[end:]
}

// substitute replaces each name of names in text with its value. A name
// assigned to or declared again is a mistake: the body would change what
// the section bound.
func substitute(text string, names map[string]string) (string, error) {
	var out strings.Builder
	last := 0
	var err error
	identifiers(text, func(start, end int) int {
		v, ok := names[text[start:end]]
		if !ok || err != nil {
			return end
		}
		p := start - 1
		for p >= 0 && (text[p] == ' ' || text[p] == '\t') {
			p--
		}
		if isField(text, p) {
			return end // a field or method of that name
		}
		n := end
		for n < len(text) && (text[n] == ' ' || text[n] == '\t') {
			n++
		}
		if (n < len(text) && text[n] == '=' && (n+1 >= len(text) || text[n+1] != '=')) ||
			strings.HasSuffix(strings.TrimRight(text[:start], " \t"), "local") {
			err = fmt.Errorf("line %d: %s is the generated section's: not to be assigned or declared again", lineOf(text, start), text[start:end])
			return end
		}
		out.WriteString(text[last:start])
		out.WriteString(v)
		last = end
		return end
	})
	if err != nil {
		return "", err
	}
	out.WriteString(text[last:])
	return out.String(), nil
}

// inlineFiles resolves the generated sections of files at compose time:
// in the file that has a section and every file after it, each name the
// section binds becomes the key, argument or value it names (bindings),
// and each call of the reply builder the table it returns; the section's
// lines become comments. Line counts do not change.
func inlineFiles(files []File) ([]File, error) {
	out := make([]File, len(files))
	copy(out, files)
	var b *builder
	names := map[string]string{}
	for i, f := range out {
		text := f.Text
		nb, start, end, err := findBuilder(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if nb != nil {
			if b != nil {
				return nil, fmt.Errorf("%s: a second reply builder (%s)", f.Name, nb.name)
			}
			b = nb
			text = text[:start] + "-- (" + b.name + ": inlined by package luascript)" + text[end:]
		}
		bound, text := bindings(text)
		for k, v := range bound {
			if _, dup := names[k]; dup {
				return nil, fmt.Errorf("%s: %s bound twice", f.Name, k)
			}
			names[k] = v
		}
		if len(names) > 0 {
			if text, err = substitute(text, names); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		if b != nil {
			if text, err = b.inline(text); err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		out[i].Text = text
	}
	return out, nil
}
