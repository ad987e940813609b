//go:build unix

package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

const configurationPage = "deploy/docs/configuration.md"

// command is one command whose flags configuration.md lists.
type command struct {
	name string   // as the page's headings and the messages name it
	argv []string // what prints its flags, from the repository's root
}

// sections maps each heading of configuration.md that holds a flag table
// to the commands whose flags that table lists. A flag in the shared
// table must be a flag of both serve commands.
var sections = map[string][]string{
	"Both servers":            {"authserver serve", "resourceserver serve"},
	"`authserver serve`":      {"authserver serve"},
	"`resourceserver serve`":  {"resourceserver serve"},
	"`go run ./deploy/local`": {"deploy/local"},
}

// flagHelp is what a command's help says of one flag.
type flagHelp struct {
	env string // the environment variable, "" for none
	def string // the default printed, "" for none (also false and 0)
}

// docRow is one row of a flag table of configuration.md.
type docRow struct {
	line          int
	flag, env     string
	defaultCell   string
	defaultValues []string // the code spans of the default cell
}

// TestConfigurationReference: configuration.md lists every flag of
// `authserver serve` and `resourceserver serve` (the built binaries'
// -h), with the environment variable and the default their help prints,
// and no flag they no longer have; and deploy/local's, from `go run
// ./deploy/local -h` (cli.PrintFlags, the servers' format), alike.
func TestConfigurationReference(t *testing.T) {
	bin := e2etest.BuildServers(t)
	rows := configurationRows(t)
	commands := []command{
		{"authserver serve", []string{filepath.Join(bin, "authserver"), "serve", "-h"}},
		{"resourceserver serve", []string{filepath.Join(bin, "resourceserver"), "serve", "-h"}},
		{"deploy/local", []string{"go", "run", "./deploy/local", "-h"}},
	}
	for _, c := range commands {
		help, out := helpOf(t, c, rows)
		if len(help) == 0 {
			t.Fatalf("%s -h: no flags found in its output:\n%s", c.name, out)
		}
		compare(t, c.name, help, rows[c.name])
	}
}

// compare reports every difference between a command's help and its rows.
func compare(t *testing.T, cmd string, help map[string]flagHelp, rows []docRow) {
	t.Helper()
	documented := map[string]bool{}
	for _, r := range rows {
		documented[r.flag] = true
		h, ok := help[r.flag]
		if !ok {
			t.Errorf("%s:%d: --%s is listed for %s, which has no such flag (%s -h)", configurationPage, r.line, r.flag, cmd, cmd)
			continue
		}
		if r.env != h.env {
			t.Errorf("%s:%d: --%s of %s: the page says environment variable %q, %s -h says %q", configurationPage, r.line, r.flag, cmd, r.env, cmd, h.env)
		}
		switch {
		case h.def != "" && !contains(r.defaultValues, h.def):
			t.Errorf("%s:%d: --%s of %s: the page's default %q lacks `%s`, the default %s -h prints", configurationPage, r.line, r.flag, cmd, r.defaultCell, h.def, cmd)
		case h.def == "" && len(r.defaultValues) > 0 && !contains([]string{"false", "0"}, r.defaultValues[0]):
			t.Errorf("%s:%d: --%s of %s: the page gives the default `%s`, but %s -h prints none", configurationPage, r.line, r.flag, cmd, r.defaultValues[0], cmd)
		}
	}
	var missing []string
	for f := range help {
		if !documented[f] {
			missing = append(missing, f)
		}
	}
	sort.Strings(missing)
	for _, f := range missing {
		t.Errorf("%s: --%s of %s (env %q, default %q) is missing from the page", configurationPage, f, cmd, help[f].env, help[f].def)
	}
}

var (
	// A flag line of pkg/cli's help: "  --name [kind]   usage".
	cliFlagLine = regexp.MustCompile(`^  --([a-z0-9][a-z0-9-]*)(?: \S+)?\s{2,}(.*)$`)
	// A flag line of package flag's PrintDefaults: "  -name [kind]",
	// its usage on the lines after it, indented by a tab.
	stdFlagLine = regexp.MustCompile(`^  --?([a-z0-9][a-z0-9-]*)(?: \S+)?$`)
	envInUsage  = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]*)`)
	// "(default X)" at the end, as pkg/cli and package flag print it
	// (package flag quotes strings); or "; default X)" inside the usage,
	// for a flag whose default is its variable's and not the flag's.
	defaultAtEnd    = regexp.MustCompile(`\(default ([^()]*)\)$`)
	defaultInUsage  = regexp.MustCompile(`[;,] default ([^;,()\s]+)\)`)
	tableRow        = regexp.MustCompile(`^\|(.*)\|\s*$`)
	codeSpanContent = regexp.MustCompile("`([^`]*)`")
)

// helpOf runs c's help in an environment without the variables the page
// names (their values would become the defaults printed) and returns the
// flags parsed from it, and its output.
func helpOf(t *testing.T, c command, rows map[string][]docRow) (map[string]flagHelp, string) {
	t.Helper()
	unset := map[string]bool{}
	for _, rs := range rows {
		for _, r := range rs {
			unset[r.env] = true
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); !unset[name] {
			env = append(env, kv)
		}
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Dir = repoRoot
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(c.argv, " "), err, out)
	}
	return parseHelp(string(out)), string(out)
}

// parseHelp reads the flags, their variables and defaults from a help
// text in pkg/cli's format or package flag's.
func parseHelp(out string) map[string]flagHelp {
	flags := map[string]flagHelp{}
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); i++ {
		name, usage := "", ""
		if m := cliFlagLine.FindStringSubmatch(lines[i]); m != nil {
			name, usage = m[1], m[2]
		} else if m := stdFlagLine.FindStringSubmatch(lines[i]); m != nil {
			name = m[1]
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    \t") {
				i++
				usage += " " + strings.TrimSpace(lines[i])
			}
			usage = strings.TrimSpace(usage)
		} else {
			continue
		}
		var h flagHelp
		if m := envInUsage.FindStringSubmatch(usage); m != nil {
			h.env = m[1]
		}
		if m := defaultAtEnd.FindStringSubmatch(usage); m != nil {
			h.def = strings.Trim(m[1], `"`)
		} else if m := defaultInUsage.FindStringSubmatch(usage); m != nil {
			h.def = m[1]
		}
		flags[name] = h
	}
	return flags
}

// configurationRows reads configuration.md's flag tables: for each command,
// the rows of its own section and of the shared one. Every section of
// sections must be on the page; a row whose first cell is no flag (an
// environment variable alone) is not one.
func configurationRows(t *testing.T) map[string][]docRow {
	t.Helper()
	p := readPage(t, configurationPage)
	rows := map[string][]docRow{}
	found := map[string]bool{}
	var cmds []string
	for i, l := range p.lines {
		if m := heading.FindStringSubmatch(l); m != nil {
			cmds = nil
			for h, cs := range sections {
				if m[2] == h {
					cmds, found[h] = cs, true
				}
			}
			continue
		}
		m := tableRow.FindStringSubmatch(l)
		if m == nil || cmds == nil {
			continue
		}
		cells := strings.Split(m[1], "|")
		if len(cells) < 4 {
			t.Fatalf("%s:%d: a flag table row has %d cells, want Flag | Env | Default | Meaning", configurationPage, i+1, len(cells))
		}
		flagCell := strings.TrimSpace(cells[0])
		if !strings.HasPrefix(flagCell, "`--") {
			continue // the header, its rule, or a variable without a flag
		}
		r := docRow{line: i + 1, flag: strings.Trim(flagCell, "`-"), defaultCell: strings.TrimSpace(cells[2])}
		if envs := codeSpanContent.FindStringSubmatch(cells[1]); envs != nil {
			r.env = envs[1]
		}
		for _, d := range codeSpanContent.FindAllStringSubmatch(cells[2], -1) {
			r.defaultValues = append(r.defaultValues, d[1])
		}
		for _, c := range cmds {
			rows[c] = append(rows[c], r)
		}
	}
	for h := range sections {
		if !found[h] {
			t.Errorf("%s has no heading %q (the test's sections)", configurationPage, h)
		}
	}
	return rows
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestParseHelp(t *testing.T) {
	cliHelp := "usage: authserver serve\n\nServe.\n\nflags:\n" +
		"  --addr string         listen address of the API (env ADDR) (default :8080)\n" +
		"  --dpop-nonces         require a nonce (env DPOP_NONCES=true)\n" +
		"  --redis-url string    Redis URL (env REDIS_URL, preferred: flags are visible in ps; default redis://127.0.0.1:6379/0)\n" +
		"  --issuer string       token issuer (\"iss\") (env ISSUER) (default http://localhost:8080)\n"
	stdHelp := "Usage of local:\n  -addr string\n    \tlisten address (127.0.0.1:0 picks a free port) (default \"127.0.0.1:8000\")\n  -keys string\n    \tsigning key set file (default: fresh keys in memory)\n"
	for _, tt := range []struct {
		help string
		want map[string]flagHelp
	}{
		{cliHelp, map[string]flagHelp{
			"addr":        {"ADDR", ":8080"},
			"dpop-nonces": {"DPOP_NONCES", ""},
			"redis-url":   {"REDIS_URL", "redis://127.0.0.1:6379/0"},
			"issuer":      {"ISSUER", "http://localhost:8080"},
		}},
		{stdHelp, map[string]flagHelp{
			"addr": {"", "127.0.0.1:8000"},
			"keys": {"", ""},
		}},
	} {
		got := parseHelp(tt.help)
		if len(got) != len(tt.want) {
			t.Errorf("parseHelp: %v, want %v", got, tt.want)
		}
		for f, w := range tt.want {
			if got[f] != w {
				t.Errorf("parseHelp: --%s %+v, want %+v", f, got[f], w)
			}
		}
	}
}
