package ratelimit

import (
	"os"
	"reflect"
	"testing"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/luascript/contractgen"
)

// TestGenerated: window.lua's and testdata/limiter.lua's generated
// sections, contracts_gen.go and limiter_gen_test.go are what the
// contracts generate now, byte for byte; the contracts cmd/luacontract
// reads without compiling are the ones compiled; and neither script names
// KEYS or ARGV outside its section.
func TestGenerated(t *testing.T) {
	for file, compiled := range map[string][]luascript.Contract{
		"contracts.go": {windowContract}, "limiter_test.go": {limiterContract},
	} {
		stale, err := contractgen.Stale(file)
		if err != nil {
			t.Fatal(err)
		}
		if len(stale) > 0 {
			t.Errorf("stale: %v; run go generate ./pkg/ratelimit", stale)
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, parsed, err := contractgen.ParseContracts(file, src)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(parsed, compiled) {
			t.Errorf("%s parsed:\n%+v\ncompiled:\n%+v", file, parsed, compiled)
		}
		for _, c := range compiled {
			text, err := os.ReadFile(c.Script)
			if err != nil {
				t.Fatal(err)
			}
			if err := luascript.Lint(string(text)); err != nil {
				t.Errorf("%s: %v", c.Script, err)
			}
		}
	}
}

// TestWindowCodes: what window_limit answers as allowed is what FromScript
// reads as allowed.
func TestWindowCodes(t *testing.T) {
	if !FromScript(int64(windowAllowed), 1, 0).Allowed || FromScript(int64(windowRefused), 1, 0).Allowed {
		t.Errorf("FromScript of %s and %s", windowAllowed, windowRefused)
	}
}
