package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// measure runs one scenario: empty rate-limit logs, the server's peak RSS
// reset, a warm-up, then the measured run with the CPU time of the server
// and Redis read around it.
func (s *stack) measure(ctx context.Context, sc string, size, rep int, scripts map[string]string, data dataFiles) (measurement, error) {
	def := scenarioOf(sc)
	proc, base := s.serverOf(def)
	if proc == nil {
		return measurement{}, fmt.Errorf("unknown scenario %q or its server not started", sc)
	}
	path, kind := def.Path, def.Load
	if err := clearRateLogs(ctx, s.rdb); err != nil {
		return measurement{}, err
	}
	run := wrkRun{Script: scripts[kind], URL: base, Data: data[kind], Path: path, Threads: s.cfg.Threads, Connections: s.cfg.Concurrency}
	// The token-tls loads run in process (tlsload.go) on the token load's
	// credentials.
	tlsKind := kind == loadTokenTLS || kind == loadTokenTLSKeepAlive
	if tlsKind {
		run.Data = data[loadToken]
	}
	runLoad := func(ctx context.Context, r wrkRun) (wrkResult, time.Duration, string, error) {
		if tlsKind {
			return s.tlsLoad(ctx, r, kind == loadTokenTLSKeepAlive)
		}
		return r.run(ctx)
	}
	m := measurement{Scenario: sc, Size: size, Rep: rep, PeakReset: resetPeakRSS(proc.pid())}
	if s.cfg.Warmup > 0 {
		warm := run
		warm.Duration = s.cfg.Warmup
		if err := s.dpopPrepare(ctx, sc, &warm, "warm"); err != nil {
			return measurement{}, err
		}
		if _, _, _, err := runLoad(ctx, warm); err != nil {
			return measurement{}, err
		}
	}
	run.Duration = s.cfg.Duration
	if err := s.dpopPrepare(ctx, sc, &run, "run"); err != nil {
		return measurement{}, err
	}
	logStart := proc.logSize()
	cpu0, err1 := cpuTime(proc.pid())
	rcpu0, err2 := s.redisCPU()
	calls0, err6 := s.calls(proc)
	profiled := s.profile(ctx, sc, size, rep)
	res, wrkCPU, out, err := runLoad(ctx, run)
	if err != nil {
		return measurement{}, err
	}
	if m.Profile, err = profiled(); err != nil {
		return measurement{}, err
	}
	cpu1, err3 := cpuTime(proc.pid())
	rcpu1, err4 := s.redisCPU()
	rss, err5 := peakRSS(proc.pid())
	calls1, err7 := s.calls(proc)
	if err := errors.Join(err1, err2, err3, err4, err5, err6, err7); err != nil {
		return measurement{}, fmt.Errorf("read /proc of %s: %w", proc.name, err)
	}
	procs := []*process{proc}
	for _, n := range s.redisNodes {
		procs = append(procs, n.proc)
	}
	for _, p := range procs {
		if p.exited() {
			return measurement{}, fmt.Errorf("%s exited during the %s run:\n%s", p.name, sc, p.tail())
		}
	}
	if err := os.WriteFile(filepath.Join(s.dir, fmt.Sprintf("wrk-%s-%d-%d.txt", sc, size, rep)), []byte(out), 0o644); err != nil {
		return measurement{}, err
	}
	m.Wrk, m.WrkCPU = res, wrkCPU
	if m.DPoP, err = s.dpopRecords(ctx, sc); err != nil {
		return measurement{}, err
	}
	if res.Status > 0 {
		m.Errors = describeErrors(proc, logStart)
		if proc == s.hydra {
			m.Errors += "; " + s.hydraProbe(ctx, sc)
		}
	}
	m.ServerCPU, m.PeakRSS = cpu1-cpu0, rss
	m.ServerCalls, m.RedisCalls = calls1.server.minus(calls0.server), calls1.redis.minus(calls0.redis)
	for i := range rcpu0 {
		m.RedisNodeCPU = append(m.RedisNodeCPU, rcpu1[i]-rcpu0[i])
		m.RedisCPU += rcpu1[i] - rcpu0[i]
	}
	return m, nil
}

// serverOf is the process a scenario measures and the URL its requests
// go to (nil for an unknown scenario, or Hydra's without --hydra-bin).
func (s *stack) serverOf(def scenario) (*process, string) {
	switch def.Server {
	case srvAuth:
		return s.auth, s.authURL
	case srvAuthTLS:
		return s.authTLS, s.authTLSURL
	case srvResource:
		return s.resource, s.resourceURL
	case srvCeiling:
		return s.ceiling, s.ceilURL
	case srvHydra:
		if def.Admin {
			return s.hydra, s.hydraAdminURL
		}
		return s.hydra, s.hydraPublicURL
	}
	return nil, ""
}

// redisCPU is the CPU time of every redis-server process, in the order of
// s.redisNodes.
func (s *stack) redisCPU() ([]time.Duration, error) {
	out := make([]time.Duration, len(s.redisNodes))
	for i, n := range s.redisNodes {
		d, err := cpuTime(n.proc.pid())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.proc.name, err)
		}
		out[i] = d
	}
	return out, nil
}

// stackCalls are the read and write system calls so far of the measured
// server and of every redis-server together.
type stackCalls struct{ server, redis syscalls }

func (s *stack) calls(proc *process) (stackCalls, error) {
	var out stackCalls
	var err error
	if out.server, err = ioCalls(proc.pid()); err != nil {
		return out, fmt.Errorf("%s: %w", proc.name, err)
	}
	for _, n := range s.redisNodes {
		c, err := ioCalls(n.proc.pid())
		if err != nil {
			return out, fmt.Errorf("%s: %w", n.proc.name, err)
		}
		out.redis.Reads += c.Reads
		out.redis.Writes += c.Writes
	}
	return out, nil
}

// describeErrors says which error statuses the server's access log shows
// since offset, and the first warning it logged. The ceiling logs nothing.
func describeErrors(p *process, offset int64) string {
	counts, first := p.errorStatuses(offset)
	if len(counts) == 0 && first == "" {
		return "not in " + p.name + "'s log"
	}
	var parts []string
	for _, st := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d x%d", st, counts[st]))
	}
	desc := p.name + " answered " + strings.Join(parts, ", ")
	if first != "" {
		if len(first) > 300 {
			first = first[:300] + "..."
		}
		desc += "; first warning: `" + first + "`"
	}
	return desc
}
