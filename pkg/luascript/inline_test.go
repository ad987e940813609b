package luascript

import (
	"strings"
	"testing"
)

const builderSrc = "local function reply(code, n, name) return {code, n or 0, name or ''} end -- luacontract:inline\n"

// TestInline: New turns each call of a generated reply builder, in its
// file and the files after it, into the table the call returns, on the
// same lines, and leaves alone what only looks like a call (a comment, a
// string, a field of that name).
func TestInline(t *testing.T) {
	lib := File{Name: "lib.lua", Text: "-- a library\n" + builderSrc + "local function f() return reply(OK) end\n"}
	body := File{Name: "body.lua", Text: strings.Join([]string{
		"-- reply(1) in a comment",
		"local s = 'reply(2)'",
		"local t = {reply = 1}",
		"if t.reply then return reply(BAD, count(x, y), st[4]) end",
		"return reply(OK,",
		"  f({1, 2}), 'a, b')",
	}, "\n") + "\n"}
	s := New(lib, body)
	want := "-- a library\n" +
		"-- (reply: inlined by package luascript)\n" +
		"local function f() return {OK, 0, ''} end\n" +
		"-- reply(1) in a comment\n" +
		"local s = 'reply(2)'\n" +
		"local t = {reply = 1}\n" +
		"if t.reply then return {BAD, count(x, y) or 0, st[4] or ''} end\n" +
		"return {OK,\n  f({1, 2}) or 0, 'a, b'}\n"
	if s.Body() != want {
		t.Fatalf("body:\n%s\nwant:\n%s", s.Body(), want)
	}
	if s.Offset("body.lua") != 3 {
		t.Errorf("Offset(body.lua) = %d, want 3: inlining moved lines", s.Offset("body.lua"))
	}
}

// TestInlineRefuses: a call New cannot inline is a mistake it reports
// rather than leave a call to a builder it removed.
func TestInlineRefuses(t *testing.T) {
	for _, text := range []string{
		"return reply()",              // no code
		"return reply(OK, 1, 'x', 2)", // too many
		"local r = reply",             // not a call
		"return reply(OK, -- hm\n 1)", // a comment inside
		"return reply(OK, (1)",        // unclosed
		"return reply(OK, , 1)",       // an empty argument
	} {
		_, err := inlineFiles([]File{{Name: "a.lua", Text: builderSrc + text + "\n"}})
		if err == nil {
			t.Errorf("%q inlined", text)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("New composed a call it cannot inline")
		}
	}()
	New(File{Name: "a.lua", Text: builderSrc + "return reply()\n"})
}

// TestLint: KEYS and ARGV are named only inside the generated section;
// comments and strings do not count.
func TestLint(t *testing.T) {
	section := SectionBegin + "\nlocal k_a = KEYS[1]\nlocal a_b = ARGV[1]\n" + SectionEnd + "\n"
	if err := Lint("-- KEYS[1] is k_a\n" + section + "return redis.call('GET', k_a, 'ARGV')\n"); err != nil {
		t.Errorf("a clean script: %v", err)
	}
	if err := Lint("return 1\n"); err != nil {
		t.Errorf("a script without keys: %v", err)
	}
	for _, bad := range []string{
		section + "return KEYS[2]\n",
		"local n = #ARGV\n",
		"return unpack(ARGV, 2)\n" + section,
	} {
		if err := Lint(bad); err == nil || !strings.Contains(err.Error(), "outside the generated section") {
			t.Errorf("Lint(%q) = %v", bad, err)
		}
	}
}

// TestBindings: the names a generated section binds become the keys,
// arguments and values they name, in its file and the files after it,
// except as fields; the section's lines stay, as comments; assigning to a
// bound name is refused.
func TestBindings(t *testing.T) {
	section := SectionBegin + "\nlocal k_rec = KEYS[1] -- the record\nlocal a_v = ARGV[2]\nlocal OK = 5\n" +
		"local a_rest = {unpack(ARGV, 3)}\n" + SectionEnd + "\n"
	lib := File{Name: "lib.lua", Text: section + "local function f() return t.OK, 'a_v' .. a_v end\n"}
	body := File{Name: "body.lua", Text: "if k_rec then return {OK, a_v, #a_rest} end\n"}
	s := New(lib, body)
	want := SectionBegin + "\n-- local k_rec = KEYS[1] -- the record\n-- local a_v = ARGV[2]\n-- local OK = 5\n" +
		"local a_rest = {unpack(ARGV, 3)}\n" + SectionEnd + "\n" +
		"local function f() return t.OK, 'a_v' .. ARGV[2] end\n" +
		"if KEYS[1] then return {5, ARGV[2], #a_rest} end\n"
	if s.Body() != want {
		t.Fatalf("body:\n%s\nwant:\n%s", s.Body(), want)
	}
	for _, bad := range []string{"a_v = 1\n", "local OK = 6\n"} {
		if _, err := inlineFiles([]File{{Name: "a.lua", Text: section + bad}}); err == nil {
			t.Errorf("%q composed", bad)
		}
	}
}
