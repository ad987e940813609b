package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// measurement is one measured run.
type measurement struct {
	Scenario string
	Size     int
	Rep      int
	Wrk      wrkResult
	// CPU time used during the run by the server, Redis and wrk.
	ServerCPU, RedisCPU, WrkCPU time.Duration
	// RedisNodeCPU is each redis-server's CPU time (report.RedisNodes'
	// order); RedisCPU is their sum.
	RedisNodeCPU []time.Duration
	// PeakRSS is the server's VmHWM after the run: its peak since the
	// run's warm-up began when PeakReset, else since it started.
	PeakRSS   int64
	PeakReset bool
	// Errors describes the answers of status 400 and above, from the
	// server's access log ("" when there were none).
	Errors string
	// DPoP is, for me-dpop, the replay records left after the run.
	DPoP *dpopRecords
	// ServerCalls and RedisCalls are the read and write system calls
	// made during the run by the server and by every redis-server.
	ServerCalls, RedisCalls syscalls
	// Profile is the CPU profile of the run's server, kept under
	// --profiles ("" without).
	Profile string
}

// MachineShare is the fraction of the machine's CPU time that the server,
// Redis and wrk used during the run. The three of them saturate the machine
// in every scenario, so a share well below 1 means other work took the
// rest: the run's req/s and latencies say more about that work than about
// the server.
func (m measurement) MachineShare(cpus int) float64 {
	if m.Wrk.Duration <= 0 || cpus <= 0 {
		return 0
	}
	return float64(m.ServerCPU+m.RedisCPU+m.WrkCPU) / (float64(m.Wrk.Duration) * float64(cpus))
}

func perRequest(d time.Duration, requests int64) time.Duration {
	if requests <= 0 {
		return 0
	}
	return d / time.Duration(requests)
}

// summary is a scenario at one size over every repetition: medians, except
// errors (summed) and peak RSS (the largest).
type summary struct {
	Scenario                    string
	Size                        int
	Reps                        int
	Throughput                  float64
	P50, P99, P999              time.Duration
	Non2xx, SocketErrors        int64
	ServerCPU, RedisCPU, WrkCPU time.Duration
	PeakRSS                     int64
	PeakReset                   bool
	// VsBare and VsRedis are the medians of the per-repetition ratios of
	// req/s to the ceilings' req/s of the same repetition (runs minutes
	// apart on a shared machine see different loads; runs of the same
	// repetition are adjacent). P99VsRedis is the same for p99.
	VsBare, VsRedis, P99VsRedis float64
	// VsHydra is, for token and introspect, the median of the
	// per-repetition ratios of req/s to Hydra's same endpoint (0 without
	// Hydra's runs). A repetition whose Hydra run answered no 2xx has no
	// ratio: it is in HydraFailed instead.
	VsHydra     float64
	HydraFailed []int
	// VsFloor is, for token and me, the median of the per-repetition
	// ratios of req/s to the endpoint's floor (scenario.Floor) of the same
	// repetition; VsAuthFloor is the same for the token and introspect
	// against their floor with the endpoint's own script (scenario.AuthFloor).
	VsFloor, VsAuthFloor float64
}

func summarize(ms []measurement) []summary {
	type key struct {
		sc   string
		size int
	}
	groups := map[key][]measurement{}
	type repKey struct {
		sc        string
		size, rep int
	}
	byRep := map[repKey]measurement{}
	var sizes []int
	for _, m := range ms {
		byRep[repKey{m.Scenario, m.Size, m.Rep}] = m
		k := key{m.Scenario, m.Size}
		groups[k] = append(groups[k], m)
		if !slices.Contains(sizes, m.Size) {
			sizes = append(sizes, m.Size)
		}
	}
	slices.Sort(sizes)
	var out []summary
	for _, size := range sizes {
		for _, sc := range scenarioOrder {
			g := groups[key{sc, size}]
			if len(g) == 0 {
				continue
			}
			s := summary{Scenario: sc, Size: size, Reps: len(g), PeakReset: true}
			var tput, vsBare, vsRedis, p99Redis, vsHydra, vsFloor, vsAuthFloor []float64
			var p50, p99, p999, scpu, rcpu, wcpu []time.Duration
			for _, m := range g {
				if b, ok := byRep[repKey{scBare, size, m.Rep}]; ok && b.Wrk.Throughput() > 0 {
					vsBare = append(vsBare, m.Wrk.Throughput()/b.Wrk.Throughput())
				}
				if r, ok := byRep[repKey{scRedis, size, m.Rep}]; ok && r.Wrk.Throughput() > 0 && r.Wrk.P99 > 0 {
					vsRedis = append(vsRedis, m.Wrk.Throughput()/r.Wrk.Throughput())
					p99Redis = append(p99Redis, float64(m.Wrk.P99)/float64(r.Wrk.P99))
				}
				if h, ok := byRep[repKey{scenarioOf(sc).Hydra, size, m.Rep}]; ok && scenarioOf(sc).Hydra != "" {
					if h.Wrk.Throughput() > 0 {
						vsHydra = append(vsHydra, m.Wrk.Throughput()/h.Wrk.Throughput())
					} else {
						s.HydraFailed = append(s.HydraFailed, m.Rep)
					}
				}
				if f, ok := byRep[repKey{scenarioOf(sc).Floor, size, m.Rep}]; ok && scenarioOf(sc).Floor != "" && f.Wrk.Throughput() > 0 {
					vsFloor = append(vsFloor, m.Wrk.Throughput()/f.Wrk.Throughput())
				}
				if f, ok := byRep[repKey{scenarioOf(sc).AuthFloor, size, m.Rep}]; ok && scenarioOf(sc).AuthFloor != "" && f.Wrk.Throughput() > 0 {
					vsAuthFloor = append(vsAuthFloor, m.Wrk.Throughput()/f.Wrk.Throughput())
				}
				tput = append(tput, m.Wrk.Throughput())
				p50, p99, p999 = append(p50, m.Wrk.P50), append(p99, m.Wrk.P99), append(p999, m.Wrk.P999)
				scpu = append(scpu, perRequest(m.ServerCPU, m.Wrk.Requests))
				rcpu = append(rcpu, perRequest(m.RedisCPU, m.Wrk.Requests))
				wcpu = append(wcpu, perRequest(m.WrkCPU, m.Wrk.Requests))
				s.Non2xx += m.Wrk.Status
				s.SocketErrors += m.Wrk.SocketErrors()
				s.PeakRSS = max(s.PeakRSS, m.PeakRSS)
				s.PeakReset = s.PeakReset && m.PeakReset
			}
			s.Throughput = median(tput)
			s.P50, s.P99, s.P999 = median(p50), median(p99), median(p999)
			s.ServerCPU, s.RedisCPU, s.WrkCPU = median(scpu), median(rcpu), median(wcpu)
			s.VsBare, s.VsRedis, s.P99VsRedis = median(vsBare), median(vsRedis), median(p99Redis)
			s.VsHydra, s.VsFloor, s.VsAuthFloor = median(vsHydra), median(vsFloor), median(vsAuthFloor)
			out = append(out, s)
		}
	}
	return out
}

// median of xs (the mean of the middle two for an even count).
func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func find(ss []summary, sc string, size int) (summary, bool) {
	for _, s := range ss {
		if s.Scenario == sc && s.Size == size {
			return s, true
		}
	}
	return summary{}, false
}

// report is everything printed.
type report struct {
	// Command is the command line the run was started with.
	Command  string
	Machine  []string
	Settings []string
	Registry []string
	Memory   []memorySample
	Runs     []measurement
	// RedisNodes label the redis-server processes of a Cluster (nil for
	// the single node).
	RedisNodes []string
	// CPUs is the machine's CPU count, for the machine share.
	CPUs int
	// Hydra describes the Ory Hydra measured side by side ("" without
	// --hydra-bin).
	Hydra string
	// CPUParts is each profiled scenario's CPU per request by part
	// (--profiles; nil without).
	CPUParts []scenarioParts
}

// writeSyscalls writes every run's read and write system calls per
// request: with pipelining, how many requests' commands shared one write
// to Redis and one read of its answers.
func writeSyscalls(w io.Writer, runs []measurement) {
	fmt.Fprintf(w, "\n#### System calls per request\n\n")
	fmt.Fprintln(w, "The read and write system calls (/proc/PID/io syscr, syscw) of the measured server and of every")
	fmt.Fprintln(w, "redis-server during the run, divided by the requests wrk completed. The server's include its HTTP")
	fmt.Fprintln(w, "reads and writes (one of each per request, and a read that finds nothing when it waits), its log's")
	fmt.Fprintln(w, "writes (batched) and its reads and writes to Redis: the fewer per request, the more requests shared")
	fmt.Fprintln(w, "one batch. Redis's include its replicas' reads of what their primaries send them.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | clients | rep | server reads | server writes | Redis reads | Redis writes |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	per := func(n, req int64) string {
		if req <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", float64(n)/float64(req))
	}
	for _, m := range runs {
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s |\n", m.Scenario, fmtInt(int64(m.Size)), m.Rep,
			per(m.ServerCalls.Reads, m.Wrk.Requests), per(m.ServerCalls.Writes, m.Wrk.Requests),
			per(m.RedisCalls.Reads, m.Wrk.Requests), per(m.RedisCalls.Writes, m.Wrk.Requests))
	}
}

// writeHydra writes the side-by-side section, when Hydra was measured.
func writeHydra(w io.Writer, ss []summary, hydra string) {
	type row struct{ ours, theirs summary }
	var rows []row
	for _, s := range ss {
		if h, ok := find(ss, scenarioOf(s.Scenario).Hydra, s.Size); ok && scenarioOf(s.Scenario).Hydra != "" {
			rows = append(rows, row{s, h})
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Side by side with Ory Hydra\n\n")
	if hydra != "" {
		fmt.Fprintf(w, "%s\n\n", hydra)
	}
	fmt.Fprintln(w, "| endpoint | clients in Redis | ours req/s | Hydra req/s | ours / Hydra | our CPU/req (server + Redis) | Hydra CPU/req | our p99 | Hydra p99 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s + %s | %s | %s | %s |\n",
			r.ours.Scenario, fmtInt(int64(r.ours.Size)), fmtInt(int64(r.ours.Throughput+0.5)), fmtInt(int64(r.theirs.Throughput+0.5)),
			fmtTimes(r.ours.VsHydra), fmtDur(r.ours.ServerCPU), fmtDur(r.ours.RedisCPU), fmtDur(r.theirs.ServerCPU),
			fmtDur(r.ours.P99), fmtDur(r.theirs.P99))
	}
	fmt.Fprintln(w, "\nours / Hydra is the median of per-repetition ratios of req/s, like the ratios to the ceilings: Hydra's")
	fmt.Fprintln(w, "runs sit in the same repetitions as ours. The token load is the same (client_credentials, HTTP Basic,")
	fmt.Fprintln(w, "rotating over as many clients, each created through Hydra's admin API); the introspection load rotates")
	fmt.Fprintln(w, "over one token per client. Hydra's admin introspection (POST /admin/oauth2/introspect) takes no client")
	fmt.Fprintln(w, "authentication (its admin port is meant to be private), while ours authenticates the caller (RFC 7662")
	fmt.Fprintln(w, "section 2.1: HTTP Basic, the client's secret checked on every request): ours does more per request.")
	fmt.Fprintln(w, "Hydra keeps clients and tokens in memory (DSN=memory, in-process SQLite); ours are in Redis, whose CPU")
	fmt.Fprintln(w, "is counted separately (the + term).")
	for _, r := range rows {
		if len(r.ours.HydraFailed) > 0 {
			fmt.Fprintf(w, "\nHydra answered no 2xx to the %s load in rep %s (see Errors below): ours / Hydra for %s is the median over the other repetitions.\n",
				r.ours.Scenario, joinInts(r.ours.HydraFailed), r.ours.Scenario)
		}
	}
}

// write writes the report of one run: its topology's section of the
// results file (results.go), under a heading of level 2.
func (r report) write(w io.Writer, cfg config) {
	ss := summarize(r.Runs)
	targets := append(evaluate(ss, cfg.Sizes, cfg.LoadClients), memoryTargets(r.Memory)...)
	fmt.Fprintf(w, "## %s\n\n", topologyOf(cfg).Title)
	if r.Command != "" {
		open, end := "`", "`"
		if strings.Contains(r.Command, "`") {
			open, end = "`` ", " ``" // a code span that holds a backquote
		}
		fmt.Fprintf(w, "- Command: %s%s%s\n", open, r.Command, end)
	}
	for _, l := range slices.Concat(r.Machine, r.Settings, r.Registry) {
		fmt.Fprintf(w, "- %s\n", l)
	}
	fmt.Fprintf(w, "- Targets: %s\n", targetsSummary(targets))
	fmt.Fprintf(w, "\n### Results (median of %d repetition(s) per row)\n\n", cfg.Reps)
	fmt.Fprintln(w, "| scenario | clients in Redis | req/s | p50 | p99 | p99.9 | non-2xx | socket errors | server CPU/req | Redis CPU/req | wrk CPU/req | peak RSS | vs bare | vs Gin+Redis |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, s := range ss {
		rss := fmtBytes(s.PeakRSS)
		if !s.PeakReset {
			rss += " (since start)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %s |\n",
			scenarioOf(s.Scenario).Label, fmtInt(int64(s.Size)), fmtInt(int64(s.Throughput+0.5)),
			fmtDur(s.P50), fmtDur(s.P99), fmtDur(s.P999), s.Non2xx, s.SocketErrors,
			fmtDur(s.ServerCPU), redisCPUCell(s.Scenario, s.RedisCPU), fmtDur(s.WrkCPU), rss,
			fmtRatio(s.VsBare), fmtRatio(s.VsRedis))
	}
	fmt.Fprintln(w, "\nreq/s counts successful (2xx) answers only. non-2xx and socket errors are summed over the repetitions;")
	fmt.Fprintln(w, "peak RSS is the largest VmHWM of the measured server (authserver, resourceserver or ceiling) over them.")
	fmt.Fprintln(w, "CPU/req is the process's user+system CPU time during the run divided by the requests wrk completed.")
	fmt.Fprintln(w, "The ratios to the ceilings are medians of per-repetition ratios: each repetition runs the ceilings and")
	fmt.Fprintln(w, "the endpoints back to back, so a ratio compares runs that shared the machine's load of the moment.")
	writeHydra(w, ss, r.Hydra)
	writeDPoP(w, r.Runs)
	writeTargets(w, targets, cfg)
	writeCPUParts(w, r.CPUParts, cfg.Profiles)
	r.writeRuns(w)
}

// writeTargets writes the targets table.
func writeTargets(w io.Writer, targets []target, cfg config) {
	fmt.Fprintf(w, "\n### Targets\n\n")
	if cfg.Concurrency != 64 {
		fmt.Fprintf(w, "The issue's targets are stated at concurrency 64; this run used %d, so these verdicts are indicative only.\n\n", cfg.Concurrency)
	}
	fmt.Fprintln(w, "| target | clients in Redis | measured | limit | result |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, t := range targets {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", t.What, t.Size, t.Measured, t.Limit, t.result())
	}
}

// targetsSummary counts the targets met and names those missed.
func targetsSummary(targets []target) string {
	met, missed := 0, []string{}
	for _, t := range targets {
		switch {
		case t.Info:
		case t.Pass:
			met++
		default:
			missed = append(missed, t.What+" (clients in Redis: "+t.Size+")")
		}
	}
	if len(missed) == 0 {
		return fmt.Sprintf("all %d met", met)
	}
	return fmt.Sprintf("%d met, %d missed: %s", met, len(missed), strings.Join(missed, "; "))
}

// writeRuns writes every run, each run's CPU on every Redis node of a
// Cluster, each run's system calls, and the errors of the runs that had
// some.
func (r report) writeRuns(w io.Writer) {
	fmt.Fprintf(w, "\n### Every run\n\n")
	fmt.Fprintln(w, "machine share: the fraction of the machine's CPU time (all its CPUs) that the server, Redis and wrk used")
	fmt.Fprintln(w, "together. They saturate the machine in every scenario, so a share far below 100% means other work took")
	fmt.Fprintln(w, "the rest and that run's req/s and latencies reflect the machine's load, not the server.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | clients | rep | req/s | p50 | p99 | p99.9 | non-2xx | socket errors | server CPU/req | Redis CPU/req | wrk CPU/req | peak RSS | machine share |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, m := range r.Runs {
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %d | %d | %s | %s | %s | %s | %s |\n",
			m.Scenario, fmtInt(int64(m.Size)), m.Rep, fmtInt(int64(m.Wrk.Throughput()+0.5)),
			fmtDur(m.Wrk.P50), fmtDur(m.Wrk.P99), fmtDur(m.Wrk.P999), m.Wrk.Status, m.Wrk.SocketErrors(),
			fmtDur(perRequest(m.ServerCPU, m.Wrk.Requests)), redisCPUCell(m.Scenario, perRequest(m.RedisCPU, m.Wrk.Requests)),
			fmtDur(perRequest(m.WrkCPU, m.Wrk.Requests)), fmtBytes(m.PeakRSS), fmtPct(m.MachineShare(r.CPUs)))
	}
	if len(r.RedisNodes) > 0 {
		fmt.Fprintf(w, "\n#### Redis CPU/req per node\n\n")
		fmt.Fprintln(w, "Each redis-server's user+system CPU time during the run divided by the requests wrk completed;")
		fmt.Fprintln(w, "Redis CPU/req above is their sum. Nodes:")
		fmt.Fprintln(w)
		for i, l := range r.RedisNodes {
			fmt.Fprintf(w, "%d. %s\n", i+1, l)
		}
		fmt.Fprintln(w)
		head, rule := "| scenario | clients | rep |", "|---|---:|---:|"
		for i := range r.RedisNodes {
			head += fmt.Sprintf(" node %d |", i+1)
			rule += "---:|"
		}
		fmt.Fprintln(w, head)
		fmt.Fprintln(w, rule)
		for _, m := range r.Runs {
			line := fmt.Sprintf("| %s | %s | %d |", m.Scenario, fmtInt(int64(m.Size)), m.Rep)
			for _, d := range m.RedisNodeCPU {
				line += " " + fmtDur(perRequest(d, m.Wrk.Requests)) + " |"
			}
			fmt.Fprintln(w, line)
		}
	}
	writeSyscalls(w, r.Runs)
	for _, m := range r.Runs {
		if m.Errors != "" {
			fmt.Fprintf(w, "\nErrors of %s, %s clients, rep %d: %s\n", m.Scenario, fmtInt(int64(m.Size)), m.Rep, m.Errors)
		}
	}
}

// fmtInt writes n with thousands separators.
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtDur writes a latency or CPU time in us below a millisecond, else ms.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
}

func fmtBytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func fmtPct(r float64) string { return fmt.Sprintf("%.1f%%", 100*r) }

// fmtTimes writes a ratio as a multiple ("12.3x"; "-" for none).
func fmtTimes(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fx", r)
}

func fmtRatio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmtPct(r)
}
