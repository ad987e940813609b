package contractgen

import (
	"bytes"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/partnerapi/authplatform/pkg/luascript"
)

// luascriptPath is the import path of package luascript, whose Reply the
// generated decoders use.
const luascriptPath = "github.com/partnerapi/authplatform/pkg/luascript"

// Generate reads the contracts of the Go file goFile (ParseContracts) and
// returns every file they generate, by path: the Go file beside goFile
// (GenName) and each contract's script with its section rewritten
// (Splice). It writes nothing.
func Generate(goFile string) (map[string][]byte, error) {
	src, err := os.ReadFile(goFile)
	if err != nil {
		return nil, err
	}
	pkg, cs, err := ParseContracts(goFile, src)
	if err != nil {
		return nil, err
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("%s: no contracts", goFile)
	}
	out := map[string][]byte{}
	code, err := GoFile(pkg, filepath.Base(goFile), cs)
	if err != nil {
		return nil, err
	}
	out[GenName(goFile)] = code
	for _, c := range cs {
		path := filepath.Join(filepath.Dir(goFile), filepath.FromSlash(c.Script))
		if _, dup := out[path]; dup {
			return nil, fmt.Errorf("%s: two contracts of %s", goFile, c.Script)
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		spliced, err := Splice(string(text), LuaSection(c, filepath.Base(goFile)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[path] = []byte(spliced)
	}
	return out, nil
}

// Stale regenerates goFile's files in memory (Generate) and returns, sorted,
// the paths whose committed text differs: a contract edited without go
// generate, or a generated part edited by hand.
func Stale(goFile string) ([]string, error) {
	files, err := Generate(goFile)
	if err != nil {
		return nil, err
	}
	var stale []string
	for path, want := range files {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			stale = append(stale, path)
		}
	}
	sort.Strings(stale)
	return stale, nil
}

// GenName is the generated Go file of goFile: contracts.go's is
// contracts_gen.go, limiter_test.go's limiter_gen_test.go.
func GenName(goFile string) string {
	if base, ok := strings.CutSuffix(goFile, "_test.go"); ok {
		return base + "_gen_test.go"
	}
	return strings.TrimSuffix(goFile, ".go") + "_gen.go"
}

// Splice replaces the section of text between the lines
// luascript.SectionBegin and luascript.SectionEnd (both included) with
// section.
func Splice(text, section string) (string, error) {
	begin := strings.Index(text, luascript.SectionBegin+"\n")
	if begin < 0 || (begin > 0 && text[begin-1] != '\n') {
		return "", fmt.Errorf("no line %q", luascript.SectionBegin)
	}
	end := strings.Index(text[begin:], "\n"+luascript.SectionEnd+"\n")
	if end < 0 {
		return "", fmt.Errorf("no line %q after the section's beginning", luascript.SectionEnd)
	}
	end += begin + len("\n"+luascript.SectionEnd+"\n")
	if strings.Contains(text[end:], luascript.SectionBegin) {
		return "", fmt.Errorf("two generated sections")
	}
	return text[:begin] + section + text[end:], nil
}

var initialisms = map[string]string{"id": "ID", "ms": "MS", "ttl": "TTL", "jti": "JTI", "dpop": "DPoP", "api": "API", "url": "URL", "ok": "OK"}

// Camel is the Go name of a snake_case (or UPPER_CASE) name: its words
// capitalised, initialisms upper case (check_secret_id: CheckSecretID).
func Camel(name string) string {
	var b strings.Builder
	for _, w := range strings.Split(strings.ToLower(name), "_") {
		if s, ok := initialisms[w]; ok {
			b.WriteString(s)
		} else if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

func codeGo(c luascript.Contract, k luascript.Code) string {
	if k.Go != "" {
		return c.Go + k.Go
	}
	return c.Go + Camel(k.Name)
}

func goType(c luascript.Contract, q luascript.Param) string {
	switch {
	case q.Rest:
		return "[]any"
	case q.Type == "int":
		return "int64"
	case q.Type == "bool":
		return "bool"
	case q.Type == "code":
		return c.Go + "Code"
	}
	return "string"
}

func zeroTest(c luascript.Contract, recv string, q luascript.Param) string {
	switch goType(c, q) {
	case "int64":
		return recv + "." + Camel(q.Name) + " == 0"
	case "bool":
		return "!" + recv + "." + Camel(q.Name)
	}
	return recv + "." + Camel(q.Name) + ` == ""`
}

// LuaSection is the generated section of c's script: locals for the keys
// and arguments, the codes, the reply builder.
func LuaSection(c luascript.Contract, source string) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("%s", luascript.SectionBegin)
	line("-- (The contract %q in %s; its Go side is in %s.)", c.Go, source, filepath.Base(GenName(source)))
	doc := func(q luascript.Param) string {
		d := q.Doc
		if q.Optional {
			d = strings.TrimSpace(d + " (optional: nil when not sent)")
		}
		if d == "" {
			return ""
		}
		return " -- " + d
	}
	for i, q := range c.Keys {
		line("local k_%s = KEYS[%d]%s", q.Name, i+1, doc(q))
	}
	for i, q := range c.Args {
		if q.Rest {
			line("local a_%s = {unpack(ARGV, %d)}%s", q.Name, i+1, doc(q))
			continue
		}
		line("local a_%s = ARGV[%d]%s", q.Name, i+1, doc(q))
	}
	for _, k := range c.Codes {
		d := ""
		if k.Doc != "" {
			d = " -- " + k.Doc
		}
		line("local %s = %d%s", k.Name, k.Value, d)
	}
	switch len(c.Reply) {
	case 0:
	case 1:
		line("-- The reply: %s, a single value.", c.Reply[0].Name)
	default:
		names := make([]string, len(c.Reply))
		elems := make([]string, len(c.Reply))
		for i, q := range c.Reply {
			names[i] = q.Name
			switch q.Type {
			case "code":
				elems[i] = q.Name
			case "", "string":
				elems[i] = q.Name + " or ''"
			default:
				elems[i] = q.Name + " or 0"
			}
		}
		line("-- The reply, always %d values, is built by reply, whose calls package", len(names))
		line("-- luascript inlines (a field not given, or nil, is 0 or ''):")
		line("--   {%s}", strings.Join(names, ", "))
		line("local function reply(%s) return {%s} end -- luacontract:inline", strings.Join(names, ", "), strings.Join(elems, ", "))
	}
	b.WriteString(luascript.SectionEnd + "\n")
	return b.String()
}

// GoFile is the generated Go source of the contracts cs of package pkg,
// declared in the file source, gofmt-ed.
func GoFile(pkg, source string, cs []luascript.Contract) ([]byte, error) {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("// Code generated by luacontract from %s; DO NOT EDIT.", source)
	line("")
	line("package %s", pkg)
	line("")
	std, own := false, false
	for _, c := range cs {
		std = std || len(c.Codes) > 0
		own = own || len(c.Reply) > 0
	}
	switch {
	case std && own:
		line("import (\n%q\n\n%q\n)", "strconv", luascriptPath)
	case std:
		line("import %q", "strconv")
	case own:
		line("import %q", luascriptPath)
	}
	for _, c := range cs {
		goContract(&b, c)
	}
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("generated Go of %s: %w", source, err)
	}
	return src, nil
}

func goComment(doc string) string {
	if doc == "" {
		return ""
	}
	return " // " + doc
}

func goContract(b *strings.Builder, c luascript.Contract) {
	line := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	what := c.Script
	if c.Doc != "" {
		what += " (" + c.Doc + ")"
	}
	list := func(kind, lua, recv, elem string, ps []luascript.Param) {
		typ := c.Go + kind
		line("")
		line("// %s are the %s of %s,", typ, lua, what)
		line("// by name; list lays them out in the script's order.")
		line("type %s struct {", typ)
		for _, q := range ps {
			d := q.Doc
			if q.Optional {
				d = strings.TrimSpace(d + " (optional: not sent when zero)")
			}
			line("%s %s%s", Camel(q.Name), goType(c, q), goComment(d))
		}
		line("}")
		line("")
		line("func (%s *%s) list() []%s {", recv, typ, elem)
		required := 0
		for _, q := range ps {
			if !q.Optional && !q.Rest {
				required++
			}
		}
		if required == len(ps) {
			var names []string
			for _, q := range ps {
				names = append(names, recv+"."+Camel(q.Name))
			}
			line("return []%s{%s}", elem, strings.Join(names, ", "))
			line("}")
			return
		}
		// One allocation of the exact length: a literal per number of
		// optional values sent.
		var names []string
		for _, q := range ps[:required] {
			names = append(names, recv+"."+Camel(q.Name))
		}
		for _, q := range ps[required:] {
			if q.Rest {
				line("l := make([]%s, 0, %d+len(%s.%s))", elem, len(names), recv, Camel(q.Name))
				if len(names) > 0 {
					line("l = append(l, %s)", strings.Join(names, ", "))
				}
				line("return append(l, %s.%s...)", recv, Camel(q.Name))
				line("}")
				return
			}
			line("if %s {", zeroTest(c, recv, q))
			line("return []%s{%s}", elem, strings.Join(names, ", "))
			line("}")
			names = append(names, recv+"."+Camel(q.Name))
		}
		line("return []%s{%s}", elem, strings.Join(names, ", "))
		line("}")
	}
	if len(c.Keys) > 0 {
		list("Keys", "KEYS", "k", "string", c.Keys)
	}
	if len(c.Args) > 0 {
		list("Args", "ARGV", "a", "any", c.Args)
	}
	if len(c.Codes) > 0 {
		typ := c.Go + "Code"
		line("")
		line("// %s is a reply code of %s; the script names it", typ, c.Script)
		line("// alike, in upper case (String).")
		line("type %s int64", typ)
		line("")
		line("// The codes of %s.", c.Script)
		line("const (")
		for _, k := range c.Codes {
			line("%s %s = %d%s", codeGo(c, k), typ, k.Value, goComment(k.Doc))
		}
		line(")")
		line("")
		line("// String is the code's name in the script.")
		line("func (c %s) String() string {", typ)
		line("switch c {")
		for _, k := range c.Codes {
			line("case %s:", codeGo(c, k))
			line("return %q", k.Name)
		}
		line("}")
		line(`return "%s(" + strconv.FormatInt(int64(c), 10) + ")"`, typ)
		line("}")
	}
	if len(c.Reply) > 0 {
		typ := c.Go + "Reply"
		line("")
		line("// %s is the reply of %s.", typ, what)
		line("type %s struct {", typ)
		for _, q := range c.Reply {
			line("%s %s%s", Camel(q.Name), goType(c, q), goComment(q.Doc))
		}
		line("}")
		line("")
		line("// decode reads a reply of the script into r.")
		line("func (r *%s) decode(reply any) error {", typ)
		line("var d luascript.Reply")
		line("d.Start(reply, %q, %d)", typ, len(c.Reply))
		for i, q := range c.Reply {
			f := Camel(q.Name)
			switch goType(c, q) {
			case "int64":
				line("r.%s = d.Int(%d, %q)", f, i, f)
			case "bool":
				line("r.%s = d.Bool(%d, %q)", f, i, f)
			case "string":
				line("r.%s = d.String(%d, %q)", f, i, f)
			default:
				line("r.%s = %s(d.Int(%d, %q))", f, goType(c, q), i, f)
			}
		}
		line("return d.Err()")
		line("}")
	}
}
