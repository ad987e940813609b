package clients

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/luascript/contractgen"
)

// TestGenerated: every file the contracts generate (each script's section,
// contracts_gen.go) is what contracts.go generates now, byte for byte: a
// contract edited without go generate, or a generated part edited by hand
// on either side, fails here. And the contracts cmd/luacontract reads
// without compiling are the ones compiled.
func TestGenerated(t *testing.T) {
	stale, err := contractgen.Stale("contracts.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(stale) > 0 {
		t.Errorf("stale: %v; run go generate ./pkg/clients", stale)
	}
	src, err := os.ReadFile("contracts.go")
	if err != nil {
		t.Fatal(err)
	}
	_, parsed, err := contractgen.ParseContracts("contracts.go", src)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parsed, scriptContracts) {
		t.Errorf("contracts.go parsed:\n%+v\ncompiled:\n%+v", parsed, scriptContracts)
	}
}

// TestLuaLint: no script of lua/ names KEYS or ARGV outside its generated
// section, and every contract names a file of lua/.
func TestLuaLint(t *testing.T) {
	files, err := filepath.Glob("lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("lua files %v, %v", files, err)
	}
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := luascript.Lint(string(text)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, c := range scriptContracts {
		if _, err := os.Stat(c.Script); err != nil {
			t.Errorf("contract %s: %v", c.Go, err)
		}
	}
}

var (
	builderCall = regexp.MustCompile(`(^|[^\w.])reply\(`)
	boundName   = regexp.MustCompile(`(^|[^\w.])[ka]_[a-z_]+`)
)

// TestInlined: the composed scripts call no reply builder (package
// luascript inlined every call), and a script's body reads as its file
// does on every line but the builder's (so error lines stay true).
func TestInlined(t *testing.T) {
	for name, s := range map[string]*luascript.Script{
		"authenticate": authenticateScript, "admit": admitAPIScript, "rotate_secret": rotateSecretScript,
		"set_limit": setLimitScript, "create_client": createClientScript, "unlock": unlockScript,
	} {
		body := s.Body()
		if builderCall.MatchString(body) || strings.Contains(body, "luacontract:inline") {
			t.Errorf("%s: a reply builder left:\n%s", name, body)
		}
	}
	// The bound names are resolved (the Rest arguments of the create
	// scripts stay locals).
	for name, s := range map[string]*luascript.Script{"authenticate": authenticateScript, "admit": admitAPIScript, "set_limit": setLimitScript} {
		for i, l := range strings.Split(s.Body(), "\n") {
			code, _, _ := strings.Cut(l, "--")
			if m := boundName.FindString(code); m != "" {
				t.Errorf("%s line %d: %q left in %q", name, i+1, m, l)
			}
		}
	}
	if !strings.Contains(authenticateScript.Body(), "return {5, gen or 0, want or 0, c or 0, w or 0, limit or 0, 0, sid or 0, 0}") {
		t.Errorf("authenticate.lua's last reply is not inlined as expected:\n%s", authenticateScript.Body())
	}
}

// TestDecodeReply: the generated decoders fill their struct in order, take
// a scalar as a reply of one and a shorter reply, and refuse a longer
// reply or a value of another type rather than guess.
func TestDecodeReply(t *testing.T) {
	var a admitReply
	if err := a.decode([]any{int64(1), int64(3), int64(59000), int64(120), "EHR", "hospital", "Acme", "acme", nil}); err != nil ||
		a != (admitReply{Code: admitAdmitted, Count: 3, WaitMS: 59000, Limit: 120, Name: "EHR", Audience: "hospital", OrgName: "Acme", OrgSlug: "acme"}) {
		t.Fatalf("admit reply %+v, %v", a, err)
	}
	dead := admitReply{Count: 7}
	if err := dead.decode([]any{int64(0)}); err != nil || dead != (admitReply{Code: admitDead}) {
		t.Fatalf("{DEAD} %+v, %v", dead, err)
	}
	var created createClientReply
	if err := created.decode(int64(1)); err != nil || created.Code != createClientCreated {
		t.Fatalf("scalar %+v, %v", created, err)
	}
	var c changeReply
	for _, bad := range []any{[]any{int64(1), int64(2), int64(3)}, []any{"1", int64(2)}} {
		if err := c.decode(bad); err == nil {
			t.Errorf("decode(%v) took it: %+v", bad, c)
		}
	}
	var r authReply
	err := r.decode([]any{int64(5), int64(1), int64(4), int64(1), int64(0), int64(30), "x"})
	if err == nil || !strings.Contains(err.Error(), "authReply.Repeated") {
		t.Errorf("a string for a bool: %v", err)
	}
	if authTokenLimited.String() != "TOKEN_LIMITED" || authCode(42).String() != "authCode(42)" {
		t.Errorf("code names %s %s", authTokenLimited, authCode(42))
	}
}

// TestArgsLayout: the generated builders lay keys and arguments out in the
// contract's order, leave out an optional one that is not set (and those
// after it), and spread a Rest argument at the end.
func TestArgsLayout(t *testing.T) {
	k := admitKeys{Client: "c", APILog: "l", RevokedMark: "r"}
	if got := k.list(); !reflect.DeepEqual(got, []string{"c", "l", "r"}) {
		t.Errorf("bearer keys %q", got)
	}
	k.ReplayMark = "m"
	if got := k.list(); !reflect.DeepEqual(got, []string{"c", "l", "r", "m"}) {
		t.Errorf("DPoP keys %q", got)
	}
	a := createClientArgs{AuditLine: "line", AuditCap: 3, Fields: []any{"name", "x"}}
	if got := a.list(); !reflect.DeepEqual(got, []any{"line", int64(3), "", "name", "x"}) {
		t.Errorf("create_client args %v", got)
	}
	ch := changeArgs{At: 1, AuditCap: 2, Nonce: "n", Actor: "a", Value: "v"}
	if got := ch.list(); len(got) != 5 {
		t.Errorf("change args without a field %v", got)
	}
}
