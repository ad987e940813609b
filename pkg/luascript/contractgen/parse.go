package contractgen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"

	"github.com/partnerapi/authplatform/pkg/luascript"
)

// ParseContracts reads the Contract literals of a Go source file without
// compiling it: every package-level var whose value is a Contract{...} or
// a []luascript.Contract{...} (the type named Contract, qualified or not). Only keyed
// fields of strings (and sums of them), integers and booleans are read; any
// other expression is an error. It returns the file's package name and the
// contracts in the file's order, each validated.
func ParseContracts(filename string, src []byte) (string, []luascript.Contract, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, 0)
	if err != nil {
		return "", nil, err
	}
	p := &reader{fset: fset}
	var cs []luascript.Contract
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			for _, v := range spec.(*ast.ValueSpec).Values {
				lit, ok := v.(*ast.CompositeLit)
				if !ok {
					continue
				}
				switch {
				case typeNamed(lit.Type, "Contract"):
					cs = append(cs, p.contract(lit))
				case isSliceOf(lit.Type, "Contract"):
					for _, e := range lit.Elts {
						if el, ok := e.(*ast.CompositeLit); ok {
							cs = append(cs, p.contract(el))
						} else {
							p.fail(e, "want a Contract literal")
						}
					}
				}
			}
		}
	}
	if p.err != nil {
		return "", nil, p.err
	}
	for _, c := range cs {
		if err := Validate(c); err != nil {
			return "", nil, fmt.Errorf("%s: %w", filename, err)
		}
	}
	return f.Name.Name, cs, nil
}

type reader struct {
	fset *token.FileSet
	err  error
}

func (p *reader) fail(n ast.Node, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: %s", p.fset.Position(n.Pos()), fmt.Sprintf(format, args...))
	}
}

func typeNamed(e ast.Expr, name string) bool {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name == name
	case *ast.SelectorExpr:
		return t.Sel.Name == name
	}
	return false
}

func isSliceOf(e ast.Expr, name string) bool {
	a, ok := e.(*ast.ArrayType)
	return ok && a.Len == nil && typeNamed(a.Elt, name)
}

// fields calls f with each keyed field of lit.
func (p *reader) fields(lit *ast.CompositeLit, f func(key string, v ast.Expr)) {
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			p.fail(e, "want keyed fields")
			continue
		}
		k, ok := kv.Key.(*ast.Ident)
		if !ok {
			p.fail(kv.Key, "want a field name")
			continue
		}
		f(k.Name, kv.Value)
	}
}

func (p *reader) contract(lit *ast.CompositeLit) luascript.Contract {
	var c luascript.Contract
	p.fields(lit, func(key string, v ast.Expr) {
		switch key {
		case "Script":
			c.Script = p.str(v)
		case "Go":
			c.Go = p.str(v)
		case "Doc":
			c.Doc = p.str(v)
		case "Keys":
			c.Keys = p.params(v)
		case "Args":
			c.Args = p.params(v)
		case "Reply":
			c.Reply = p.params(v)
		case "Codes":
			for _, e := range p.list(v, "Code") {
				c.Codes = append(c.Codes, p.code(e))
			}
		default:
			p.fail(v, "Contract has no field %s", key)
		}
	})
	return c
}

// list returns the element literals of a []name{...}.
func (p *reader) list(v ast.Expr, name string) []*ast.CompositeLit {
	lit, ok := v.(*ast.CompositeLit)
	if !ok || !isSliceOf(lit.Type, name) {
		p.fail(v, "want a []%s literal", name)
		return nil
	}
	var out []*ast.CompositeLit
	for _, e := range lit.Elts {
		el, ok := e.(*ast.CompositeLit)
		if !ok {
			p.fail(e, "want a %s literal", name)
			continue
		}
		out = append(out, el)
	}
	return out
}

func (p *reader) params(v ast.Expr) []luascript.Param {
	var ps []luascript.Param
	for _, lit := range p.list(v, "Param") {
		var q luascript.Param
		p.fields(lit, func(key string, v ast.Expr) {
			switch key {
			case "Name":
				q.Name = p.str(v)
			case "Type":
				q.Type = p.str(v)
			case "Doc":
				q.Doc = p.str(v)
			case "Optional":
				q.Optional = p.boolean(v)
			case "Rest":
				q.Rest = p.boolean(v)
			default:
				p.fail(v, "Param has no field %s", key)
			}
		})
		ps = append(ps, q)
	}
	return ps
}

func (p *reader) code(lit *ast.CompositeLit) luascript.Code {
	var c luascript.Code
	p.fields(lit, func(key string, v ast.Expr) {
		switch key {
		case "Name":
			c.Name = p.str(v)
		case "Value":
			c.Value = p.integer(v)
		case "Doc":
			c.Doc = p.str(v)
		case "Go":
			c.Go = p.str(v)
		default:
			p.fail(v, "Code has no field %s", key)
		}
	})
	return c
}

func (p *reader) str(v ast.Expr) string {
	switch e := v.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			if err == nil {
				return s
			}
		}
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			return p.str(e.X) + p.str(e.Y)
		}
	case *ast.ParenExpr:
		return p.str(e.X)
	}
	p.fail(v, "want a string literal")
	return ""
}

func (p *reader) integer(v ast.Expr) int64 {
	switch e := v.(type) {
	case *ast.BasicLit:
		if e.Kind == token.INT {
			n, err := strconv.ParseInt(e.Value, 0, 64)
			if err == nil {
				return n
			}
		}
	case *ast.UnaryExpr:
		if e.Op == token.SUB {
			return -p.integer(e.X)
		}
	}
	p.fail(v, "want an integer literal")
	return 0
}

func (p *reader) boolean(v ast.Expr) bool {
	if id, ok := v.(*ast.Ident); ok && (id.Name == "true" || id.Name == "false") {
		return id.Name == "true"
	}
	p.fail(v, "want true or false")
	return false
}

var (
	snakeName = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	codeName  = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$`)
	goName    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)
)

// Validate reports the first mistake of c: a name of the wrong form or used
// twice, an unknown Type, an Optional before a required one, a Rest that is
// not the last argument.
func Validate(c luascript.Contract) error {
	if c.Script == "" || !goName.MatchString(c.Go) {
		return fmt.Errorf("contract %q (%s): want Script and a Go prefix", c.Go, c.Script)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("contract %s (%s): %s", c.Go, c.Script, fmt.Sprintf(format, args...))
	}
	for _, group := range []struct {
		what string
		ps   []luascript.Param
	}{{"key", c.Keys}, {"argument", c.Args}, {"reply field", c.Reply}} {
		seen := map[string]bool{}
		optional := false
		for i, q := range group.ps {
			switch {
			case !snakeName.MatchString(q.Name):
				return bad("%s %d: name %q is not snake_case", group.what, i+1, q.Name)
			case seen[q.Name]:
				return bad("%s %s twice", group.what, q.Name)
			case optional && !q.Optional && !q.Rest:
				return bad("%s %s is required after an optional one", group.what, q.Name)
			case q.Rest && (group.what != "argument" || i != len(group.ps)-1):
				return bad("%s %s: only the last argument may be Rest", group.what, q.Name)
			case q.Optional && group.what == "reply field":
				return bad("reply field %s: a reply has no optional fields", q.Name)
			}
			seen[q.Name] = true
			optional = optional || q.Optional
			switch q.Type {
			case "", "string", "int", "bool":
				if group.what == "key" && q.Type != "" && q.Type != "string" {
					return bad("key %s: a key is a string", q.Name)
				}
			case "code":
				if group.what != "reply field" || len(c.Codes) == 0 {
					return bad("%s %s: type code is a reply field's, of a contract with codes", group.what, q.Name)
				}
			default:
				return bad("%s %s: unknown type %q", group.what, q.Name, q.Type)
			}
		}
	}
	seen := map[string]bool{}
	values := map[int64]string{}
	for _, k := range c.Codes {
		switch {
		case !codeName.MatchString(k.Name):
			return bad("code %q is not UPPER_CASE", k.Name)
		case seen[k.Name]:
			return bad("code %s twice", k.Name)
		case values[k.Value] != "":
			return bad("codes %s and %s are both %d", values[k.Value], k.Name, k.Value)
		case k.Go != "" && !goName.MatchString(k.Go):
			return bad("code %s: Go name %q", k.Name, k.Go)
		}
		seen[k.Name], values[k.Value] = true, k.Name
	}
	return nil
}
