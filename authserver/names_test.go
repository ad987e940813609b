package main

import (
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// hostileNames act on a terminal instead of showing: newline, CR, an ANSI
// colour sequence, BEL, a right-to-left override, an isolate, a C1 CSI.
var hostileNames = []string{"Acme\nHealth", "Acme\rHealth", "Acme \x1b[31mred\x1b[0m", "Acme\aHealth", "Acme \u202eevil", "Acme \u2066x\u2069", "Acme \u009b31m"}

// TestNamesRefused: the CLI refuses every such name for an organisation, a
// client and an operator client (the admin API by the same rule:
// adminapi's TestNamesRefused), and writes nothing.
func TestNamesRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.must("orgs", "create", "--slug", "names", "--name", "Names", "--environment", "live")
	for _, name := range hostileNames {
		for _, args := range [][]string{
			{"orgs", "create", "--slug", "hostile", "--name", name, "--environment", "live"},
			{"clients", "create", "--org", "names", "--name", name, "--audience", "pharma", "--scopes", ""},
			{"operators", "create", "--name", name},
		} {
			out, err := h.run(args...)
			if err == nil || !strings.Contains(err.Error(), "control and bidirectional formatting characters are not allowed") || out != "" {
				t.Errorf("%s %q: %v, stdout %q; want refused", args[0]+" "+args[1], name, err, out)
			}
		}
	}
	if out := h.must("orgs", "list"); strings.Contains(out, "hostile") {
		t.Errorf("orgs list after refusals:\n%s", out)
	}
	if out := h.must("clients", "list", "--org", "names"); strings.Count(out, "\n") != 1 {
		t.Errorf("clients list after refusals:\n%s", out)
	}
	// Printable names of any script still work, and are printed as given.
	h.must("orgs", "create", "--slug", "intl", "--name", "Klinikum Köln – 東京 (עברית)", "--environment", "live")
	if out := h.must("orgs", "list"); !strings.Contains(out, "Klinikum Köln – 東京 (עברית)") {
		t.Errorf("orgs list:\n%s", out)
	}
}

// TestNamesEscaped: a name stored before the rule (written here straight
// into Redis) is escaped wherever the CLI prints it for people; --json
// escapes it as encoding/json does (controls, not U+202E: a JSON reader
// gets the name as stored).
func TestNamesEscaped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.must("orgs", "create", "--slug", "old", "--name", "Old", "--environment", "live")
	c := h.createClient("--org", "old", "--name", "placeholder", "--audience", "pharma", "--scopes", "")
	ctx := t.Context()
	stored := "Evil\x1b[2J\nname\a \u202eoc.lmth\\"
	if err := h.rdb.HSet(ctx, h.prefix+"{"+c.ID+"}:client", "name", stored, "org_name", stored).Err(); err != nil {
		t.Fatal(err)
	}
	if err := h.rdb.HSet(ctx, h.prefix+"{org:old}:org", "name", stored).Err(); err != nil {
		t.Fatal(err)
	}
	escaped := `Evil\x1b[2J\nname\a \u202eoc.lmth\\`
	for _, args := range [][]string{{"clients", "show", c.ID}, {"clients", "list"}, {"orgs", "list"}} {
		out := h.must(args...)
		if !strings.Contains(out, escaped) {
			t.Errorf("%s: want %s in\n%s", strings.Join(args, " "), escaped, out)
		}
		if strings.ContainsAny(out, "\x1b\a\u202e\r") || strings.Contains(out, "Evil\x1b") {
			t.Errorf("%s printed a raw control character:\n%q", strings.Join(args, " "), out)
		}
	}
	if out := h.must("clients", "show", c.ID, "--json"); !strings.Contains(out, `"name": "Evil\u001b[2J\nname\u0007 `+"\u202e"+`oc.lmth\\"`) {
		t.Errorf("clients show --json:\n%s", out)
	}
	for in, want := range map[string]string{"plain": "plain", "a\\b": `a\\b`, "\xff": `\xff`, "tab\t": `tab\t`, "\u00a0nbsp": `\u00a0nbsp`, "é": "é"} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNameProblems(t *testing.T) {
	t.Parallel()
	for _, name := range hostileNames {
		if len(clients.NameProblems(name)) == 0 {
			t.Errorf("%q accepted", name)
		}
	}
	// Issue 59 point 14: names that show nothing.
	for _, name := range []string{"\u200b", "\ufeff", "\u00ad", "\u200b\ufeff\u00ad", " \u200b ", "\u3164", "\u0301", "\u2800"} {
		errs := clients.NameProblems(name)
		if len(errs) != 1 || !strings.Contains(errs[0], "only invisible characters") {
			t.Errorf("%q: %v, want the invisible-name refusal", name, errs)
		}
	}
	for _, name := range []string{"Acme Health", "Klinikum Köln", "東京", "עברית", "O'Brien & Co.", "Acme\u200bHealth", "\u00adA", "1", "-"} {
		if errs := clients.NameProblems(name); len(errs) != 0 {
			t.Errorf("%q: %v", name, errs)
		}
	}
}
