package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// reportOf is the report of one fixed me run (and its ceiling) of the
// topology of args, as the harness writes it into the results file.
func reportOf(t *testing.T, args ...string) string {
	t.Helper()
	cfg, err := parseConfig(append([]string{"--clients", "100", "--reps", "1", "--scenarios", "redis,me"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	run := func(sc string, ok int64) measurement {
		return measurement{Scenario: sc, Size: 100, Rep: 1, PeakReset: true, ServerCPU: 50 * time.Microsecond * time.Duration(ok),
			Wrk: wrkResult{Requests: ok, Duration: time.Second, P99: 2 * time.Millisecond}}
	}
	var b strings.Builder
	report{Command: commandLine(append([]string{"bench"}, args...)), Machine: []string{"Machine: test"}, CPUs: 2,
		Runs: []measurement{run(scRedis, 20000), run(scMe, 15000)}}.write(&b, cfg)
	return b.String()
}

// TestResultsKeepOtherTopology: a run's report replaces its own
// topology's section of the results file and keeps the other's byte for
// byte, whichever runs first; the header says which topologies have a
// run.
func TestResultsKeepOtherTopology(t *testing.T) {
	file := filepath.Join(t.TempDir(), "RESULTS.md")
	one, cluster := reportOf(t), reportOf(t, "--redis-cluster", "3")
	if !strings.HasPrefix(one, "## One Redis node\n\n- Command: `go run ./deploy/bench`\n") ||
		!strings.HasPrefix(cluster, "## Redis Cluster\n\n- Command: `go run ./deploy/bench --redis-cluster 3`\n") {
		t.Fatalf("reports begin %.80q and %.80q, want their topology's heading and command", one, cluster)
	}

	if err := writeResults(file, "redis-cluster", cluster); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, file)
	if !strings.Contains(got, "- One Redis node: no run yet.\n- Redis Cluster: the latest run is below.\n") {
		t.Errorf("after a Cluster run the header says:\n%s", got)
	}
	if err := writeResults(file, "one-node", one); err != nil {
		t.Fatal(err)
	}
	// A second one-node run replaces the first.
	again := strings.Replace(one, "Machine: test", "Machine: another", 1)
	if err := writeResults(file, "one-node", again); err != nil {
		t.Fatal(err)
	}
	got = readFile(t, file)
	f, err := parseResults(got)
	if err != nil {
		t.Fatalf("parse what was written: %v\n%s", err, got)
	}
	if want := (resultsFile{"one-node": again, "redis-cluster": cluster}); !maps.Equal(f, want) {
		t.Errorf("sections = %q, want %q", f, want)
	}
	if strings.Count(got, "Machine: test") != 1 || strings.Count(got, "## One Redis node") != 1 {
		t.Errorf("the first one-node report survived its replacement:\n%s", got)
	}
	if !strings.Contains(got, "- One Redis node: the latest run is below.\n- Redis Cluster: the latest run is below.\n") {
		t.Errorf("header:\n%s", got)
	}
	// The one node's section comes first whatever order the runs took.
	if strings.Index(got, "<!-- bench:begin one-node ") > strings.Index(got, "<!-- bench:begin redis-cluster ") {
		t.Errorf("sections out of order:\n%s", got)
	}
}

// TestResultsRoundTrip: formatting what was parsed gives the same text,
// and parsing what was formatted the same sections, with none, one or
// both topologies.
func TestResultsRoundTrip(t *testing.T) {
	one, cluster := reportOf(t), reportOf(t, "--redis-cluster", "3", "--redis-cluster-replicas", "1")
	for _, f := range []resultsFile{{}, {"one-node": one}, {"redis-cluster": cluster}, {"one-node": one, "redis-cluster": cluster}} {
		text := f.format()
		back, err := parseResults(text)
		if err != nil {
			t.Errorf("parse(format(%d sections)): %v\n%s", len(f), err, text)
			continue
		}
		if !maps.Equal(back, f) {
			t.Errorf("parse(format(f)) = %q, want %q", back, f)
		}
		if again := back.format(); again != text {
			t.Errorf("format(parse(text)) differs from text:\n%s\nwant:\n%s", again, text)
		}
	}
	if f, err := parseResults(""); err != nil || len(f) != 0 {
		t.Errorf("an empty file = %q, %v; want no section", f, err)
	}
	// The file with no run: the header alone, saying so.
	empty := resultsFile{}.format()
	if !strings.HasPrefix(empty, resultsMark+"\n# Load harness results\n") || !strings.HasSuffix(empty, "- One Redis node: no run yet.\n- Redis Cluster: no run yet.\n") {
		t.Errorf("the file with no run:\n%s", empty)
	}
}

// TestResultsNoResidue: nothing written by hand survives a write. Text
// added outside the sections (the header, between them) is dropped, the
// file is exactly the header and the harness's sections, and no report
// line can pass for a marker.
func TestResultsNoResidue(t *testing.T) {
	file := filepath.Join(t.TempDir(), "RESULTS.md")
	one, cluster := reportOf(t), reportOf(t, "--redis-cluster", "3")
	text := resultsFile{"redis-cluster": cluster}.format()
	text = strings.Replace(text, "# Load harness results\n", "# Load harness results\n\nNOTE BY HAND: the machine was busy.\n", 1)
	text = strings.Replace(text, "\n<!-- bench:begin", "\nANOTHER NOTE\n<!-- bench:begin", 1)
	text += "\n## Earlier runs\n\nA HAND-KEPT DIARY\n"
	writeFile(t, file, text)
	if err := writeResults(file, "one-node", one); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, file)
	for _, hand := range []string{"NOTE BY HAND", "ANOTHER NOTE", "Earlier runs", "HAND-KEPT DIARY"} {
		if strings.Contains(got, hand) {
			t.Errorf("%q survived the write:\n%s", hand, got)
		}
	}
	if want := (resultsFile{"one-node": one, "redis-cluster": cluster}).format(); got != want {
		t.Errorf("file:\n%s\nwant the header and the two sections only:\n%s", got, want)
	}
	for _, r := range []string{one, cluster} {
		if strings.Contains(r, markPrefix) {
			t.Errorf("a report holds a marker:\n%s", r)
		}
	}
	if err := (resultsFile{}).set("one-node", "## One Redis node\n"+beginMark+"one-node sha256=x -->\n"); err == nil {
		t.Error("set took a report holding a marker line")
	}
}

// TestResultsRefused: the harness writes over no file but its own, whole
// and as it wrote it, and leaves a refused file as it was.
func TestResultsRefused(t *testing.T) {
	one, cluster := reportOf(t), reportOf(t, "--redis-cluster", "3")
	good := resultsFile{"one-node": one, "redis-cluster": cluster}.format()
	begin := beginMark + "redis-cluster sha256=" + checksum(cluster) + markClose + "\n"
	for name, c := range map[string]struct{ text, want string }{
		"the old diary":          {"# Load harness results\n\n## 2026-11-30 14:29 UTC: a run\n", "not a report the harness wrote"},
		"a section edited":       {strings.Replace(good, "Machine: test", "Machine: quiet, trust me", 1), "section one-node (lines"},
		"a section without end":  {strings.TrimSuffix(good, endMark+"redis-cluster"+markClose+"\n"), "section redis-cluster has no end marker"},
		"a section twice":        {good + "\n" + begin + cluster + endMark + "redis-cluster" + markClose + "\n", "a second section redis-cluster"},
		"an unknown topology":    {resultsMark + "\n" + beginMark + "sentinel sha256=00" + markClose + "\n" + endMark + "sentinel" + markClose + "\n", "names no known topology"},
		"a stray end":            {resultsMark + "\n" + endMark + "one-node" + markClose + "\n", "is not a section's begin marker"},
		"sections interleaved":   {strings.Replace(good, endMark+"one-node"+markClose+"\n", "", 1), "not ended before another marker"},
		"cut short":              {strings.TrimSuffix(good, "\n"), "unterminated"},
		"a marker without a sum": {resultsMark + "\n" + beginMark + "one-node" + markClose + "\n", "names no known topology with its checksum"},
	} {
		file := filepath.Join(t.TempDir(), "RESULTS.md")
		writeFile(t, file, c.text)
		err := writeResults(file, "one-node", one)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), file) {
			t.Errorf("%s: %v, want an error naming the file and saying %q", name, err, c.want)
		}
		if got := readFile(t, file); got != c.text {
			t.Errorf("%s: the refused file was changed", name)
		}
	}
}

// TestRunRefusesForeignOut: run checks --out before it builds or starts
// anything, so a file the harness did not write fails at once.
func TestRunRefusesForeignOut(t *testing.T) {
	file := filepath.Join(t.TempDir(), "README.md")
	writeFile(t, file, "# A README\n")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "--out", file}, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "not a report the harness wrote") {
		t.Errorf("run = %v, want the file refused", err)
	}
	if stderr.Len() != 0 || stdout.Len() != 0 || readFile(t, file) != "# A README\n" {
		t.Errorf("run did something before refusing: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

func TestCommandLine(t *testing.T) {
	for args, want := range map[string]string{
		"bench": "go run ./deploy/bench",
		"bench --quick --out deploy/bench/RESULTS.md":    "go run ./deploy/bench --quick --out deploy/bench/RESULTS.md",
		"bench --profiles /tmp/a b --scenarios=me,admit": "go run ./deploy/bench --profiles /tmp/a b --scenarios=me,admit",
	} {
		if got := commandLine(strings.Fields(args)); got != want {
			t.Errorf("commandLine(%q) = %q, want %q", args, got, want)
		}
	}
	if got, want := commandLine([]string{"bench", "--out", "my results.md", "--log-level", "", "--x", "it's"}),
		`go run ./deploy/bench --out 'my results.md' --log-level '' --x 'it'\''s'`; got != want {
		t.Errorf("commandLine quoting = %s, want %s", got, want)
	}
}

func TestCPUInfo(t *testing.T) {
	two := "processor\t: 0\nmodel name\t: AMD EPYC\nphysical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\nphysical id\t: 0\ncore id\t\t: 1\n"
	if model, cores := cpuInfo(two); model != "AMD EPYC" || cores != "2 cores" {
		t.Errorf("cpuInfo = %q, %q; want AMD EPYC, 2 cores", model, cores)
	}
	// Two sockets whose cores share ids, and hyperthreads sharing a core.
	smt := "model name: X\nphysical id: 0\ncore id: 0\nmodel name: X\nphysical id: 0\ncore id: 0\nmodel name: X\nphysical id: 1\ncore id: 0\n"
	if _, cores := cpuInfo(smt); cores != "2 cores" {
		t.Errorf("cpuInfo of two sockets, the first's core with two threads = %q, want 2 cores", cores)
	}
	if model, cores := cpuInfo("processor: 0\n"); model != "CPU model unknown" || cores != "cores unknown" {
		t.Errorf("cpuInfo without model or cores = %q, %q", model, cores)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCommittedResults: the module's RESULTS.md is as the harness wrote
// it: its mark, its sections whole and unedited, the current header and
// nothing else, so an edit by hand fails the quick suite.
func TestCommittedResults(t *testing.T) {
	text := readFile(t, "RESULTS.md")
	f, err := parseResults(text)
	if err != nil {
		t.Fatalf("RESULTS.md: %v", err)
	}
	if got := f.format(); got != text {
		t.Errorf("RESULTS.md is not what the harness writes (text outside its sections, or a header older than the harness's): rewrite it with the harness, as its header says")
	}
}

// TestTargetsSummary: the report's first lines count the targets met and
// name each one missed; comparisons shown for context count as neither.
func TestTargetsSummary(t *testing.T) {
	if r := reportOf(t); !strings.Contains(r, "\n- Targets: 2 met, 1 missed: /me req/s vs Gin + 1 Redis round trip (clients in Redis: 100)\n") {
		t.Errorf("report's targets line:\n%s", r)
	}
	ts := []target{{What: "a", Size: "all", Pass: true}, {What: "b", Size: "1", Info: true}, {What: "c", Size: "1", Pass: true}}
	if got := targetsSummary(ts); got != "all 2 met" {
		t.Errorf("targetsSummary = %q, want all 2 met", got)
	}
}
