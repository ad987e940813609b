package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// cpuPart is a row of the report's "Where the CPU goes": code named by
// the prefixes of its functions' symbols.
type cpuPart struct {
	Name     string
	Prefixes []string
}

// module is this module's path, the prefix of its symbols.
const module = "github.com/partnerapi/authplatform/"

// cpuParts are the parts a CPU profile's samples are told apart by, each
// sample counted once (attribute): under the part of the innermost of its
// frames that some part names, so that a write(2) under go-redis is
// go-redis's, one under net/http's answer net/http's, and what our
// handlers allocate is theirs. A frame several parts name goes to the
// first of them. The last two rows of the report's table are not here:
// net/http is split by what its frames are under (attribute), and what no
// part names is the rest.
var cpuParts = []cpuPart{
	{"Ed25519 (signing, verifying)", []string{"crypto/ed25519.", "crypto/internal/fips140/ed25519.", "crypto/internal/fips140/edwards25519"}},
	{"go-redis (commands, pipeliner, replies; their system calls)", []string{"github.com/redis/go-redis/"}},
	{"the access record (log/slog, pkg/logging)", []string{"log/slog.", module + "pkg/logging."}},
	{"metrics (Prometheus client, pkg/metrics)", []string{"github.com/prometheus/", module + "pkg/metrics."}},
	{"jwx (JWS, JWT, JWK)", []string{"github.com/lestrrat-go/"}},
	{"go-oauth2", []string{"github.com/go-oauth2/"}},
	{"Gin", []string{"github.com/gin-gonic/"}},
	// The connection wrapper of pkg/httpserver (its Read feeds the
	// framing check) is net/http's reading: the read(2) under it is the
	// same one the ceiling's net/http makes.
	{partHTTP, []string{"net/http.", "net/textproto.", module + "pkg/httpserver.(*conn)."}},
	{"pkg/httpserver (base layer, router, framing check)", []string{module + "pkg/httpserver."}},
	{"our handlers and packages (the ceiling's included)", []string{module, "main."}},
	{"garbage collection (background workers)", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
}

// partHTTP is net/http's part, which attribute splits three ways.
const partHTTP = "net/http"

// The rows net/http's part is split into, and the row of what no part
// names.
const (
	partHTTPRead  = "net/http: reading requests (their read(2) included)"
	partHTTPWrite = "net/http: writing answers (headers, write(2))"
	partHTTPOther = "net/http: the rest (connection loop, background read)"
	partRest      = "the rest (scheduler, network poller, runtime)"
)

// partRows are the report's rows, in order.
func partRows() []string {
	var rows []string
	for _, p := range cpuParts {
		if p.Name == partHTTP {
			rows = append(rows, partHTTPRead, partHTTPWrite, partHTTPOther)
			continue
		}
		rows = append(rows, p.Name)
	}
	return append(rows, partRest)
}

// attribute is the row a sample's stack (its function names, innermost
// first) counts under.
func attribute(stack []string) string {
	for _, fn := range stack {
		for _, p := range cpuParts {
			for _, prefix := range p.Prefixes {
				if strings.HasPrefix(fn, prefix) {
					if p.Name == partHTTP {
						return httpRow(stack)
					}
					return p.Name
				}
			}
		}
	}
	return partRest
}

// httpRow splits net/http's part by the net/http frame it is under:
// readRequest reads a request's head (and, for a form, the handler's
// body read is the handler's), finishRequest flushes the answer with its
// headers.
func httpRow(stack []string) string {
	for _, fn := range stack {
		switch fn {
		case "net/http.(*conn).readRequest":
			return partHTTPRead
		case "net/http.(*response).finishRequest":
			return partHTTPWrite
		}
	}
	return partHTTPOther
}

// profileParts reads a CPU profile (a file go tool pprof reads) and sums
// its CPU time by row.
func profileParts(file string) (map[string]time.Duration, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return partsOf(p)
}

// partsOf sums p's CPU time (its "cpu" sample type, in nanoseconds) by
// row.
func partsOf(p *profile.Profile) (map[string]time.Duration, error) {
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("not a CPU profile (sample types %v)", p.SampleType)
	}
	out := map[string]time.Duration{}
	var stack []string
	for _, s := range p.Sample {
		stack = stack[:0]
		for _, loc := range s.Location {
			// A location's lines are its inlined calls, innermost first.
			for _, l := range loc.Line {
				if l.Function != nil {
					stack = append(stack, l.Function.Name)
				}
			}
		}
		out[attribute(stack)] += time.Duration(s.Value[idx])
	}
	return out, nil
}

// scenarioParts is the CPU per request by row of one scenario's profiled
// runs, pooled: their profiles' time over their requests.
type scenarioParts struct {
	Scenario string
	Runs     int
	PerReq   map[string]time.Duration
	// Total is the whole profiles' time per request, Proc the server's
	// CPU per request by /proc over the same runs, Redis every
	// redis-server's (which no profile of the server holds).
	Total, Proc, Redis time.Duration
}

// cpuPartsOf pools the profiled runs of each scenario at the largest
// registry size (--profiles profiles those only), in the table's order.
func cpuPartsOf(runs []measurement) ([]scenarioParts, error) {
	size := 0
	for _, m := range runs {
		if m.Profile != "" {
			size = max(size, m.Size)
		}
	}
	var out []scenarioParts
	for _, sc := range scenarioOrder {
		sum := map[string]time.Duration{}
		var requests int64
		var total, proc, redis time.Duration
		n := 0
		for _, m := range runs {
			if m.Scenario != sc || m.Size != size || m.Profile == "" || m.Wrk.Requests <= 0 {
				continue
			}
			parts, err := profileParts(m.Profile)
			if err != nil {
				return nil, err
			}
			for row, d := range parts {
				sum[row] += d
				total += d
			}
			requests += m.Wrk.Requests
			proc += m.ServerCPU
			redis += m.RedisCPU
			n++
		}
		if n == 0 {
			continue
		}
		per := map[string]time.Duration{}
		for row, d := range sum {
			per[row] = d / time.Duration(requests)
		}
		out = append(out, scenarioParts{Scenario: sc, Runs: n, PerReq: per,
			Total: total / time.Duration(requests), Proc: proc / time.Duration(requests), Redis: redis / time.Duration(requests)})
	}
	return out, nil
}

// floorForParts is the floor each endpoint's excess is shown over: the
// floor that makes the endpoint's own Redis script where there is one.
func floorForParts(sc string) string {
	if f := scenarioOf(sc).AuthFloor; f != "" {
		return f
	}
	return scenarioOf(sc).Floor
}

// writeCPUParts writes the report's "Where the CPU goes" (--profiles).
func writeCPUParts(w io.Writer, parts []scenarioParts, dir string) {
	if len(parts) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Where the CPU goes (--profiles %s)\n\n", dir)
	fmt.Fprintln(w, "A CPU profile of the process serving each run at the largest registry (the servers' own profiles, the")
	fmt.Fprintln(w, "ceiling's --pprof-addr; kept in that directory), its time divided by the requests wrk completed, pooled")
	fmt.Fprintln(w, "over the repetitions. Each sample counts once, under the innermost of its frames that a row names: a")
	fmt.Fprintln(w, "write(2) under go-redis is go-redis's, one under net/http's answer net/http's; an allocation is its")
	fmt.Fprintln(w, "caller's. The columns after the scenarios are each endpoint's CPU per request over its floor's: where")
	fmt.Fprintln(w, "what the endpoint spends beyond the floor goes. Redis's CPU (by /proc, no profile's) is given beside")
	fmt.Fprintln(w, "the server's. The runs ran under the profiler, which costs a little.")
	fmt.Fprintln(w)
	by := map[string]scenarioParts{}
	head, rule := "| µs per request |", "|---|"
	for _, p := range parts {
		by[p.Scenario] = p
		head += " " + p.Scenario + " |"
		rule += "---:|"
	}
	type pair struct{ endpoint, floor string }
	var pairs []pair
	for _, p := range parts {
		if f := floorForParts(p.Scenario); f != "" {
			if _, ok := by[f]; ok {
				pairs = append(pairs, pair{p.Scenario, f})
				head += " " + p.Scenario + " - " + f + " |"
				rule += "---:|"
			}
		}
	}
	fmt.Fprintln(w, head)
	fmt.Fprintln(w, rule)
	us := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }
	signed := func(d time.Duration) string {
		if d > 0 {
			return "+" + us(d)
		}
		return us(d)
	}
	row := func(name string, get func(scenarioParts) time.Duration) {
		line := "| " + name + " |"
		for _, p := range parts {
			line += " " + us(get(p)) + " |"
		}
		for _, pr := range pairs {
			line += " " + signed(get(by[pr.endpoint])-get(by[pr.floor])) + " |"
		}
		fmt.Fprintln(w, line)
	}
	for _, name := range partRows() {
		if !slices.ContainsFunc(parts, func(p scenarioParts) bool { return p.PerReq[name] > 0 }) {
			continue
		}
		row(name, func(p scenarioParts) time.Duration { return p.PerReq[name] })
	}
	row("**the whole profile**", func(p scenarioParts) time.Duration { return p.Total })
	row("the server's CPU by /proc, the same runs", func(p scenarioParts) time.Duration { return p.Proc })
	row("Redis's CPU by /proc, the same runs (every redis-server)", func(p scenarioParts) time.Duration { return p.Redis })
	runs := "| profiled runs |"
	for _, p := range parts {
		runs += fmt.Sprintf(" %d |", p.Runs)
	}
	for range pairs {
		runs += " |"
	}
	fmt.Fprintln(w, runs)
	for _, pr := range pairs {
		fmt.Fprintf(w, "\n%s\n", excessSummary(by[pr.endpoint], by[pr.floor]))
	}
}

// excessSummary says in a sentence what an endpoint spends beyond its
// floor, per request: in all, in Redis, and its largest parts (up to
// four, those of at least 0.5 µs).
func excessSummary(endpoint, floor scenarioParts) string {
	type part struct {
		name string
		d    time.Duration
	}
	var parts []part
	for _, name := range partRows() {
		if d := endpoint.PerReq[name] - floor.PerReq[name]; d >= 500*time.Nanosecond {
			parts = append(parts, part{name, d})
		}
	}
	slices.SortStableFunc(parts, func(a, b part) int { return int(b.d - a.d) })
	us := func(d time.Duration) string { return fmt.Sprintf("%+.1f µs", float64(d)/float64(time.Microsecond)) }
	out := fmt.Sprintf("%s over %s: %s of the server's CPU per request by its profiles (%s by /proc), %s of Redis's",
		endpoint.Scenario, floor.Scenario, us(endpoint.Total-floor.Total), us(endpoint.Proc-floor.Proc), us(endpoint.Redis-floor.Redis))
	if len(parts) == 0 {
		return out + "."
	}
	var named []string
	for _, p := range parts[:min(4, len(parts))] {
		named = append(named, p.name+" "+us(p.d))
	}
	return out + "; the most of it: " + strings.Join(named, ", ") + "."
}
