package main

import (
	"github.com/partnerapi/authplatform/pkg/redistest"

	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runBudget bounds a harness run in these tests: the run itself takes
// under two minutes, but its go build of the servers, with their
// profile-guided optimization (release.pgo), compiles their whole
// dependency tree anew when the build cache has no such build yet (over
// three minutes on two cores).
const runBudget = 10 * time.Minute

// TestQuickRun runs the whole harness in its CI setting (--quick: 2 s runs,
// one repetition, concurrency 8, registries of 1, 100 and 1,000 clients,
// load over up to 100) and expects a row for every scenario at every size,
// every request answered 2xx, and a verdict for every target. Under CI=true a missing wrk or
// redis-server fails the test; elsewhere it is skipped.
func TestQuickRun(t *testing.T) {
	requireTools(t)
	redistest.Long(t) // the quick load run takes about a minute

	ctx, cancel := context.WithTimeout(context.Background(), runBudget)
	defer cancel()
	outFile := t.TempDir() + "/results.md"
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"bench", "--quick", "--out", outFile}, os.Getenv, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	// The --out file holds the report printed, as its one-node section.
	saved, err := readResults(outFile)
	if err != nil || len(saved) != 1 || saved["one-node"] != stdout.String() {
		t.Errorf("--out file's sections %q (err %v), want the one-node section only, as printed", slices.Collect(maps.Keys(saved)), err)
	}
	table := section(stdout.String(), "### Results", "### Targets")
	for _, size := range []string{"1", "100", "1,000"} {
		for _, sc := range scenarioOrder {
			if isHydra(sc) {
				continue // only with --hydra-bin
			}
			if scenarioOf(sc).Hot != "" && size != "1,000" {
				continue // the hot scenarios run at the largest registry only
			}
			row := findRow(table, scenarioOf(sc).Label, size)
			if row == nil {
				t.Errorf("no result row for %s at %s clients in:\n%s", sc, size, table)
				continue
			}
			// Columns: scenario, clients, req/s, p50, p99, p99.9, non-2xx, socket errors, ...
			if len(row) != 14 {
				t.Errorf("%s at %s: %d columns, want 14: %q", sc, size, len(row), row)
				continue
			}
			if row[6] != "0" || row[7] != "0" {
				t.Errorf("%s at %s: %s non-2xx and %s socket errors, want none", sc, size, row[6], row[7])
			}
			if row[2] == "0" {
				t.Errorf("%s at %s: no successful request", sc, size)
			}
		}
	}
	targets := section(stdout.String(), "### Targets", "### Every run")
	for _, want := range []string{"/me req/s", "/me p99", "token req/s", "token p99", "introspect req/s",
		"authserver peak RSS", "resourceserver peak RSS", "every request succeeded",
		"me CPU/req (server + Redis) flat in registry size, load over 100 client(s) at both",
		"token CPU/req (server + Redis) flat in registry size, load over 100 client(s) at both",
		"me CPU/req (server + Redis), load on the hot clients vs spread",
		"token CPU/req (server + Redis), load on the hot clients vs spread",
		"Redis memory per registered client",
		"token's floor (Gin + 1 EVALSHA + 1 signed token) req/s vs bare Gin JSON", "token req/s vs its floor",
		"/me's floor (Gin + the bearer admission) req/s vs Gin + 1 Redis round trip", "/me req/s vs its floor",
		"token's floor with its authentication (Gin + the authentication script + 1 signed token) req/s vs bare Gin JSON",
		"token req/s vs its floor with its authentication",
		"introspect's floor (Gin + the cached verification + the caller's authentication script) req/s vs bare Gin JSON",
		"introspect req/s vs its floor"} {
		if !strings.Contains(targets, "| "+want) {
			t.Errorf("targets table lacks %q:\n%s", want, targets)
		}
	}
	if strings.Contains(stdout.String(), "Hydra") {
		t.Errorf("report without --hydra-bin mentions Hydra")
	}
	if row := findRow(targets, "every request succeeded", "all"); row == nil || row[4] != "PASS" {
		t.Errorf("requests failed: %q", row)
	}
	if t.Failed() {
		t.Logf("report:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

// TestProfileGuided runs the token, introspect and me scenarios and the
// authcheck floor with --pgo-out and --profiles: each server serves its
// profiles (PPROF), the ceiling too (--pprof-addr), the harness takes a
// CPU profile of each run, and writes one merged profile per server where
// the release build takes it (<dir>/<server>/release.pgo), holding the
// server's own handlers. The report names the profiles the module's binaries were
// built with: the ones committed beside their main packages. --profiles
// keeps every run's profile, the floor's included, and the report tells
// each scenario's CPU per request by part, and introspection's over its
// floor's.
func TestProfileGuided(t *testing.T) {
	requireTools(t)
	redistest.Long(t) // about 20 s

	ctx, cancel := context.WithTimeout(context.Background(), runBudget)
	defer cancel()
	dir, kept := t.TempDir(), filepath.Join(t.TempDir(), "profiles")
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"bench", "--quick", "--clients", "10", "--load-clients", "10", "--scenarios", "token,introspect,me,authcheck",
		"--pgo-out", dir, "--profiles", kept}, os.Getenv, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	for server, want := range map[string]string{
		"authserver":     "tokenserver.(*Server).handleIntrospect",
		"resourceserver": "resourceserver/api.",
	} {
		file := filepath.Join(dir, server, "release.pgo")
		b, err := os.ReadFile(file)
		if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: %v, want a gzipped profile (%d bytes)", file, err, len(b))
			continue
		}
		top, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-cum", "-nodecount=400", file).CombinedOutput()
		if err != nil || !strings.Contains(string(top), want) {
			t.Errorf("go tool pprof -top %s: %v, want %q in:\n%.3000s", file, err, want, top)
		}
		if !strings.Contains(stderr.String(), "wrote "+file+" (") {
			t.Errorf("no word of %s in the log:\n%s", file, stderr.String())
		}
	}
	for _, want := range []string{"Build (profile-guided optimization): authserver with authserver/release.pgo, resourceserver with resourceserver/release.pgo, ceiling without a profile",
		"Profiled (--pgo-out " + dir + ")", "Profiled (--profiles " + kept + ")"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, stdout.String())
		}
	}

	for _, sc := range []string{"authcheck", "token", "me", "introspect"} {
		file := filepath.Join(kept, sc+"-1.pb.gz")
		if parts, err := profileParts(file); err != nil || len(parts) == 0 {
			t.Errorf("%s: %v, %v; want a CPU profile", file, parts, err)
		}
	}
	parts := section(stdout.String(), "### Where the CPU goes (--profiles "+kept+")", "\x00")
	if !strings.Contains(parts, "\n| µs per request | authcheck | token | me | introspect | introspect - authcheck |\n") {
		t.Errorf("no table of the four scenarios and introspection over its floor:\n%s", parts)
	}
	for _, first := range []string{"**the whole profile**", "the server's CPU by /proc"} {
		row := findRowOf(parts, first)
		if len(row) != 6 {
			t.Errorf("row %q = %q, want 6 cells:\n%s", first, row, parts)
			continue
		}
		for i, cell := range row[1:5] {
			if v, err := strconv.ParseFloat(cell, 64); err != nil || v <= 0 {
				t.Errorf("row %q, column %d = %q, want some µs per request", first, i+1, cell)
			}
		}
	}
	if row := findRowOf(parts, "profiled runs"); len(row) < 5 || strings.Join(row[1:5], ",") != "1,1,1,1" {
		t.Errorf("profiled runs = %q, want one of each", row)
	}
}

// findRowOf returns the cells of the Markdown table row whose first cell
// starts with first.
func findRowOf(table, first string) []string {
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(line, "| ") && strings.HasPrefix(cells[0], first) {
			return cells
		}
	}
	return nil
}

// TestQuickCluster runs the harness on a Redis Cluster of 3 primaries
// (--quick --redis-cluster 3, the me scenario and its ceiling on a
// registry of 100 clients) and expects successful requests only, the
// topology in the header and each primary's share of the Redis CPU.
func TestQuickCluster(t *testing.T) {
	requireTools(t)
	redistest.Long(t) // about 20 s

	ctx, cancel := context.WithTimeout(context.Background(), runBudget)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"bench", "--quick", "--redis-cluster", "3", "--clients", "100", "--scenarios", "redis,me"}, os.Getenv, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "Redis Cluster: 3 primaries x 0 replicas, no persistence") {
		t.Errorf("no topology line")
	}
	table := section(out, "### Results", "### Targets")
	for _, sc := range []string{scRedis, scMe} {
		row := findRow(table, scenarioOf(sc).Label, "100")
		if row == nil || len(row) != 14 {
			t.Errorf("%s: row %q", sc, row)
			continue
		}
		if row[2] == "0" || row[6] != "0" || row[7] != "0" {
			t.Errorf("%s: %s req/s, %s non-2xx, %s socket errors; want some, none, none", sc, row[2], row[6], row[7])
		}
	}
	nodes := section(out, "#### Redis CPU/req per node", "\nErrors")
	row := findRow(nodes, "me", "100")
	if len(row) != 6 {
		t.Errorf("per-node row of me: %q, want 3 nodes", row)
	} else {
		for _, c := range row[3:] {
			if c == "0 µs" {
				t.Errorf("a primary took no share of /me's load: %q", row)
			}
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s\nstderr:\n%s", out, stderr.String())
	}
}

// section is the text of s from the line starting with from up to the one
// starting with to.
func section(s, from, to string) string {
	_, after, _ := strings.Cut(s, "\n"+from)
	before, _, _ := strings.Cut(after, "\n"+to)
	return before
}

// findRow returns the cells of the Markdown table row whose first cell
// starts with first and whose second cell is second.
func findRow(table, first, second string) []string {
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| ") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) > 1 && strings.HasPrefix(cells[0], first) && cells[1] == second {
			return cells
		}
	}
	return nil
}

// requireTools skips the test when wrk or redis-server is missing, and
// fails it under CI=true, which must have installed them.
func requireTools(t *testing.T) {
	t.Helper()
	for _, tl := range requiredTools {
		if _, err := exec.LookPath(tl.command); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed (CI=true): apt-get install -y %s", tl.command, tl.pkg)
			}
			t.Skipf("%s is not installed: apt-get install -y %s", tl.command, tl.pkg)
		}
	}
}
