package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// TestAttribute: a sample counts under the innermost of its frames that a
// part names; net/http's part is split by the frame it is under; what no
// part names is the rest.
func TestAttribute(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stack []string // innermost first
		want  string
	}{
		{"the signature", []string{"crypto/internal/fips140/edwards25519/field.feMul", "crypto/internal/fips140/edwards25519.(*Point).ScalarBaseMult",
			"github.com/lestrrat-go/dsig.Sign", module + "pkg/accesstoken.(*Issuer).Issue", "net/http.(*conn).serve"}, "Ed25519 (signing, verifying)"},
		{"jwx around it", []string{"runtime.mallocgc", "github.com/lestrrat-go/jwx/v3/jws.Sign", module + "pkg/accesstoken.(*Issuer).Issue"}, "jwx (JWS, JWT, JWK)"},
		{"a write(2) to Redis", []string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "net.(*conn).Write",
			"bufio.(*Writer).Flush", "github.com/redis/go-redis/v9/internal/pool.(*Conn).WithWriter", "github.com/redis/go-redis/v9.(*AutoPipeliner).dispatchCmds"}, "go-redis (commands, pipeliner, replies; their system calls)"},
		{"the answer's write(2)", []string{"internal/runtime/syscall/linux.Syscall6", "syscall.write", "net.(*conn).Write", "net/http.checkConnErrorWriter.Write",
			"bufio.(*Writer).Flush", "net/http.(*response).finishRequest", "net/http.(*conn).serve"}, partHTTPWrite},
		{"the request's read(2), through the framing wrapper", []string{"internal/runtime/syscall/linux.Syscall6", "syscall.read", "net.(*conn).Read",
			module + "pkg/httpserver.(*conn).Read", "net/http.(*connReader).Read", "bufio.(*Reader).fill", "net/http.(*conn).readRequest", "net/http.(*conn).serve"}, partHTTPRead},
		{"the framing check itself", []string{module + "pkg/httpserver.(*framing).feed", module + "pkg/httpserver.(*conn).Read", "net/http.(*conn).readRequest"}, "pkg/httpserver (base layer, router, framing check)"},
		{"the background read", []string{"syscall.read", "net.(*conn).Read", "net/http.(*connReader).backgroundRead"}, partHTTPOther},
		{"the access record", []string{"log/slog.(*handleState).appendAttr", "log/slog.(*JSONHandler).Handle", module + "pkg/logging.contextHandler.Handle",
			module + "pkg/httpserver.Base.Wrap.func1.1", module + "authserver/tokenserver.(*Server).ServeHTTP"}, "the access record (log/slog, pkg/logging)"},
		{"an allocation of a handler", []string{"runtime.mallocgc", "runtime.newobject", module + "authserver/tokenserver.parseForm", "net/http.HandlerFunc.ServeHTTP"}, "our handlers and packages (the ceiling's included)"},
		{"the ceiling's own handler", []string{"runtime.memmove", "main.newHandler.func5", "github.com/gin-gonic/gin.(*Context).Next"}, "our handlers and packages (the ceiling's included)"},
		{"Gin's router", []string{"github.com/gin-gonic/gin.(*node).getValue", "github.com/gin-gonic/gin.(*Engine).handleHTTPRequest", module + "pkg/httpserver.Base.Wrap.func1"}, "Gin"},
		{"metrics", []string{"github.com/prometheus/client_golang/prometheus.(*histogram).Observe", module + "pkg/metrics.(*Metrics).ObserveHTTP"}, "metrics (Prometheus client, pkg/metrics)"},
		{"go-oauth2", []string{"runtime.mallocgc", "github.com/go-oauth2/oauth2/v4/manage.(*Manager).GenerateAccessToken"}, "go-oauth2"},
		{"the collector", []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker.func2", "runtime.systemstack"}, "garbage collection (background workers)"},
		{"the scheduler", []string{"runtime.futex", "runtime.notesleep", "runtime.findRunnable", "runtime.schedule", "runtime.mcall"}, partRest},
	} {
		if got := attribute(tc.stack); got != tc.want {
			t.Errorf("%s: attribute = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// cpuProfile is a CPU profile (the runtime's sample types) of the given
// samples: each a stack, innermost first, and its nanoseconds. Inlined
// calls share a location when a stack element holds several names
// separated by "|" (innermost first).
func cpuProfile(samples map[string]int64) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000,
	}
	funcs := map[string]*profile.Function{}
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	for stack, ns := range samples {
		s := &profile.Sample{Value: []int64{ns / 10_000_000, ns}}
		for _, frame := range strings.Split(stack, ";") {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1)}
			for _, name := range strings.Split(frame, "|") {
				loc.Line = append(loc.Line, profile.Line{Function: fn(name)})
			}
			p.Location = append(p.Location, loc)
			s.Location = append(s.Location, loc)
		}
		p.Sample = append(p.Sample, s)
	}
	return p
}

// TestProfileParts: a profile written and read back (the format the
// runtime serves) is summed by part over its "cpu" values; an inlined
// frame of a location counts like any other.
func TestProfileParts(t *testing.T) {
	p := cpuProfile(map[string]int64{
		"crypto/internal/fips140/edwards25519/field.feMul;" + module + "pkg/accesstoken.(*Issuer).Issue":                             30_000_000,
		"runtime.memmove|" + module + "pkg/clients.(*Store).Authenticate;net/http.HandlerFunc.ServeHTTP":                             20_000_000,
		"syscall.write;net/http.checkConnErrorWriter.Write;net/http.(*response).finishRequest|net/http.(*conn).serve":                40_000_000,
		"runtime.futex;runtime.findRunnable;runtime.schedule":                                                                        10_000_000,
		"github.com/redis/go-redis/v9/internal/proto.(*Reader).ReadReply;github.com/redis/go-redis/v9.(*AutoPipeliner).dispatchCmds": 10_000_000,
	})
	file := filepath.Join(t.TempDir(), "cpu.pb.gz")
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := profileParts(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{
		"Ed25519 (signing, verifying)":                       30 * time.Millisecond,
		"our handlers and packages (the ceiling's included)": 20 * time.Millisecond,
		partHTTPWrite: 40 * time.Millisecond,
		partRest:      10 * time.Millisecond,
		"go-redis (commands, pipeliner, replies; their system calls)": 10 * time.Millisecond,
	}
	if len(got) != len(want) {
		t.Errorf("parts = %v, want %v", got, want)
	}
	for row, d := range want {
		if got[row] != d {
			t.Errorf("%s = %v, want %v (all: %v)", row, got[row], d, got)
		}
	}

	heap := &profile.Profile{SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}}}
	if _, err := partsOf(heap); err == nil || !strings.Contains(err.Error(), "not a CPU profile") {
		t.Errorf("a heap profile: %v, want not a CPU profile", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.pb.gz")
	if err := os.WriteFile(bad, []byte("not a profile"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := profileParts(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a file that is no profile: %v, want an error naming it", err)
	}
}

// TestCPUPartsReport: the profiles of two repetitions of an endpoint and
// of its floor are pooled per scenario (their time over their requests),
// only those at the largest registry, and the report gives every part
// either has, the whole profile, the server's and Redis's CPU by /proc
// and the endpoint's excess over its floor, in the table and in a
// sentence naming its largest parts.
func TestCPUPartsReport(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, samples map[string]int64) string {
		var buf bytes.Buffer
		if err := cpuProfile(samples).Write(&buf); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, name)
		if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	const (
		handler = module + "resourceserver/api.(*server).me"
		base    = module + "pkg/httpserver.Base.Wrap.func1"
		admit   = module + "pkg/admission.(*Admission).Admit"
		flush   = "syscall.write;net/http.(*response).finishRequest"
	)
	run := func(sc string, size, rep int, requests int64, cpu time.Duration, file string) measurement {
		return measurement{Scenario: sc, Size: size, Rep: rep, Wrk: wrkResult{Requests: requests}, ServerCPU: cpu, RedisCPU: cpu / 2, Profile: file}
	}
	runs := []measurement{
		// A smaller registry's run is left out even with a profile.
		run(scMe, 10, 1, 1000, time.Second, write("me-small.pb.gz", map[string]int64{handler: 900_000_000})),
		run(scAdmit, 1000, 1, 1000, 30*time.Millisecond, write("admit-1.pb.gz", map[string]int64{admit: 10_000_000, flush: 20_000_000})),
		run(scAdmit, 1000, 2, 3000, 90*time.Millisecond, write("admit-2.pb.gz", map[string]int64{admit: 30_000_000, flush: 60_000_000})),
		run(scMe, 1000, 1, 2000, 84*time.Millisecond, write("me-1.pb.gz", map[string]int64{admit: 20_000_000, flush: 40_000_000, handler: 10_000_000, base: 10_000_000})),
		run(scMe, 1000, 2, 2000, 84*time.Millisecond, write("me-2.pb.gz", map[string]int64{admit: 20_000_000, flush: 40_000_000, handler: 10_000_000, base: 10_000_000})),
		// Hydra's runs have no profile.
		run(scHydraToken, 1000, 1, 500, time.Second, ""),
	}
	parts, err := cpuPartsOf(runs)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	writeCPUParts(&out, parts, "prof")
	want := `
### Where the CPU goes (--profiles prof)
`
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("report begins %.80q, want %q", out.String(), want)
	}
	table := out.String()[strings.Index(out.String(), "| µs per request"):]
	wantTable := `| µs per request | admit | me | me - admit |
|---|---:|---:|---:|
| net/http: writing answers (headers, write(2)) | 20.0 | 20.0 | 0.0 |
| pkg/httpserver (base layer, router, framing check) | 0.0 | 5.0 | +5.0 |
| our handlers and packages (the ceiling's included) | 10.0 | 15.0 | +5.0 |
| **the whole profile** | 30.0 | 40.0 | +10.0 |
| the server's CPU by /proc, the same runs | 30.0 | 42.0 | +12.0 |
| Redis's CPU by /proc, the same runs (every redis-server) | 15.0 | 21.0 | +6.0 |
| profiled runs | 2 | 2 | |

me over admit: +10.0 µs of the server's CPU per request by its profiles (+12.0 µs by /proc), +6.0 µs of Redis's; the most of it: pkg/httpserver (base layer, router, framing check) +5.0 µs, our handlers and packages (the ceiling's included) +5.0 µs.
`
	if table != wantTable {
		t.Errorf("table:\n%s\nwant:\n%s", table, wantTable)
	}

	var none bytes.Buffer
	writeCPUParts(&none, nil, "prof")
	if none.Len() != 0 {
		t.Errorf("without profiles the report has %q, want nothing", none.String())
	}
}
