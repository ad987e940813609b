package contractgen

import (
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/luascript"
)

const sample = `package p

import "github.com/partnerapi/authplatform/pkg/luascript"

var c = luascript.Contract{
	Script: "x.lua", Go: "x", Doc: "a " + "sample",
	Keys:   []luascript.Param{{Name: "rec", Doc: "the record"}, {Name: "mark", Optional: true}},
	Args: []luascript.Param{
		{Name: "now_ms", Type: "int"},
		{Name: "rest", Rest: true},
	},
	Reply: []luascript.Param{{Name: "code", Type: "code"}, {Name: "check_id", Type: "int"}, {Name: "name"}},
	Codes: []luascript.Code{{Name: "NO", Value: -1}, {Name: "YES", Value: 1}},
}
`

// TestGenerateSample: a contract parses as written and generates its Lua
// section and compilable-looking Go.
func TestGenerateSample(t *testing.T) {
	pkg, cs, err := ParseContracts("c.go", []byte(sample))
	if err != nil || pkg != "p" || len(cs) != 1 {
		t.Fatalf("%s %+v %v", pkg, cs, err)
	}
	c := cs[0]
	if c.Doc != "a sample" || !c.Keys[1].Optional || !c.Args[1].Rest || c.Codes[0].Value != -1 {
		t.Fatalf("parsed %+v", c)
	}
	lua := LuaSection(c, "c.go")
	for _, want := range []string{
		"local k_rec = KEYS[1] -- the record\n",
		"local k_mark = KEYS[2] -- (optional: nil when not sent)\n",
		"local a_rest = {unpack(ARGV, 2)}\n",
		"local NO = -1\n",
		"local function reply(code, check_id, name) return {code, check_id or 0, name or ''} end -- luacontract:inline\n",
	} {
		if !strings.Contains(lua, want) {
			t.Errorf("section lacks %q:\n%s", want, lua)
		}
	}
	src, err := GoFile(pkg, "c.go", cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"type xKeys struct", "Mark string", "if k.Mark == \"\" {", "CheckID int64", "return append(l, a.Rest...)",
		"xNo  xCode = -1", "func (r *xReply) decode(reply any) error", "r.Code = xCode(d.Int(0, \"Code\"))",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("Go lacks %q:\n%s", want, src)
		}
	}
}

// TestValidate: the mistakes a contract can make are refused.
func TestValidate(t *testing.T) {
	ok := luascript.Contract{Script: "x.lua", Go: "x"}
	for name, c := range map[string]luascript.Contract{
		"camel name":   {Script: "x.lua", Go: "x", Args: []luascript.Param{{Name: "nowMS"}}},
		"twice":        {Script: "x.lua", Go: "x", Keys: []luascript.Param{{Name: "a"}, {Name: "a"}}},
		"after opt":    {Script: "x.lua", Go: "x", Keys: []luascript.Param{{Name: "a", Optional: true}, {Name: "b"}}},
		"rest not end": {Script: "x.lua", Go: "x", Args: []luascript.Param{{Name: "a", Rest: true}, {Name: "b"}}},
		"int key":      {Script: "x.lua", Go: "x", Keys: []luascript.Param{{Name: "a", Type: "int"}}},
		"no codes":     {Script: "x.lua", Go: "x", Reply: []luascript.Param{{Name: "a", Type: "code"}}},
		"same value":   {Script: "x.lua", Go: "x", Codes: []luascript.Code{{Name: "A", Value: 1}, {Name: "B", Value: 1}}},
		"lower code":   {Script: "x.lua", Go: "x", Codes: []luascript.Code{{Name: "a"}}},
		"no script":    {Go: "x"},
	} {
		if Validate(c) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := Validate(ok); err != nil {
		t.Error(err)
	}
	if _, _, err := ParseContracts("c.go", []byte("package p\nvar c = luascript.Contract{Script: name}\n")); err == nil {
		t.Error("a non-literal parsed")
	}
}

// TestCamelAndSplice: Go names and the section's replacement.
func TestCamelAndSplice(t *testing.T) {
	for in, want := range map[string]string{"check_secret_id": "CheckSecretID", "jti_ttl_ms": "JTITTLMS", "TOKEN_LIMITED": "TokenLimited", "ok": "OK"} {
		if got := Camel(in); got != want {
			t.Errorf("Camel(%s) = %s, want %s", in, got, want)
		}
	}
	text := "-- head\n" + luascript.SectionBegin + "\nold\n" + luascript.SectionEnd + "\nbody\n"
	got, err := Splice(text, luascript.SectionBegin+"\nnew\n"+luascript.SectionEnd+"\n")
	if err != nil || got != "-- head\n"+luascript.SectionBegin+"\nnew\n"+luascript.SectionEnd+"\nbody\n" {
		t.Errorf("Splice: %q %v", got, err)
	}
	if _, err := Splice("body\n", "x"); err == nil {
		t.Error("Splice without a section")
	}
	if GenName("a/contracts.go") != "a/contracts_gen.go" || GenName("limiter_test.go") != "limiter_gen_test.go" {
		t.Error("GenName")
	}
}
