package main

import (
	"context"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// luaFS holds the wrk scripts: common.lua and one script per request kind.
//
//go:embed wrk/*.lua
var luaFS embed.FS

// writeScripts writes, for each request kind, common.lua followed by the
// kind's script into dir, and returns their paths by kind.
func writeScripts(dir string) (map[string]string, error) {
	common, err := luaFS.ReadFile("wrk/common.lua")
	if err != nil {
		return nil, err
	}
	paths := map[string]string{}
	for _, kind := range []string{loadToken, loadMe, loadIntrospect, loadMeDPoP} {
		own, err := luaFS.ReadFile("wrk/" + kind + ".lua")
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, kind+".lua")
		if err := os.WriteFile(p, append(append(common, '\n'), own...), 0o644); err != nil {
			return nil, err
		}
		paths[kind] = p
	}
	return paths, nil
}

// wrkResult is what wrk's done() reported.
type wrkResult struct {
	// Requests counts completed requests, whatever their status.
	Requests int64
	Duration time.Duration
	// Status counts answers of status 400 and above.
	Status int64
	// Socket errors.
	Connect, Read, Write, Timeout int64
	P50, P99, P999, Max           time.Duration
	// Exhausted counts the sends past the end of a thread's data in a
	// script whose lines are single use (me-dpop.lua): a shortfall of the
	// harness's data, never the server's, so the run is repeated.
	Exhausted int64
}

// OK is the number of successful answers.
func (r wrkResult) OK() int64 { return r.Requests - r.Status }

// SocketErrors counts connect, read, write errors and timeouts.
func (r wrkResult) SocketErrors() int64 { return r.Connect + r.Read + r.Write + r.Timeout }

// Throughput is successful answers per second: a refused request (401, 429,
// 503) is an error, never throughput.
func (r wrkResult) Throughput() float64 {
	if r.Duration <= 0 {
		return 0
	}
	return float64(r.OK()) / r.Duration.Seconds()
}

// wrkRun is one wrk invocation.
type wrkRun struct {
	Script, URL, Data, Path string
	Threads, Connections    int
	Duration                time.Duration
}

// run runs wrk and returns its result, the CPU time wrk itself used and
// its whole output.
func (w wrkRun) run(ctx context.Context) (wrkResult, time.Duration, string, error) {
	secs := int((w.Duration + time.Second - 1) / time.Second)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk",
		"-t", strconv.Itoa(w.Threads), "-c", strconv.Itoa(w.Connections),
		"-d", strconv.Itoa(secs)+"s", "--timeout", "10s", "--latency",
		"-s", w.Script, w.URL, "--", w.Data, w.Path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, 0, string(out), fmt.Errorf("wrk %s%s: %w\n%s", w.URL, w.Path, err, out)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	res, err := parseWrk(string(out))
	if err != nil {
		return wrkResult{}, 0, string(out), fmt.Errorf("wrk %s%s: %w\n%s", w.URL, w.Path, err, out)
	}
	return res, cpu, string(out), nil
}

// parseWrk reads the BENCH_RESULT line that common.lua's done() prints.
func parseWrk(out string) (wrkResult, error) {
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "BENCH_RESULT ")
		if !ok {
			continue
		}
		v := map[string]int64{}
		for _, f := range strings.Fields(rest) {
			k, val, ok := strings.Cut(f, "=")
			n, err := strconv.ParseInt(val, 10, 64)
			if !ok || err != nil {
				return wrkResult{}, fmt.Errorf("BENCH_RESULT field %q", f)
			}
			v[k] = n
		}
		for _, k := range []string{"requests", "duration_us", "status", "connect", "read", "write", "timeout", "p50_us", "p99_us", "p999_us", "max_us", "exhausted"} {
			if _, ok := v[k]; !ok {
				return wrkResult{}, fmt.Errorf("BENCH_RESULT lacks %s", k)
			}
		}
		us := func(k string) time.Duration { return time.Duration(v[k]) * time.Microsecond }
		return wrkResult{
			Requests: v["requests"], Duration: us("duration_us"), Status: v["status"],
			Connect: v["connect"], Read: v["read"], Write: v["write"], Timeout: v["timeout"],
			P50: us("p50_us"), P99: us("p99_us"), P999: us("p999_us"), Max: us("max_us"),
			Exhausted: v["exhausted"],
		}, nil
	}
	return wrkResult{}, fmt.Errorf("no BENCH_RESULT line in wrk's output")
}
