package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/tracing"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if help := (*helpRequested)(nil); errors.As(err, &help) {
		fmt.Fprint(os.Stdout, help.usage)
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench: "+err.Error())
		os.Exit(1)
	}
}

// audience is the token audience the servers are started with.
const audience = "partner-api"

// run is the whole harness; main only supplies the process's environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseConfig(args[1:])
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", a...) }
	if cfg.Out != "" {
		// The file is the harness's own (results.go): refuse another
		// before minutes of load, not after.
		if _, err := readResults(cfg.Out); err != nil {
			return err
		}
	}
	if err := ensureTools(ctx, cfg.Install, stderr); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "bench-")
	if err != nil {
		return err
	}
	if cfg.Keep {
		logf("work directory (kept): %s", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	logf("building the servers and the ceiling")
	bins, err := build(ctx, cfg, dir)
	if err != nil {
		return err
	}
	scripts, err := writeScripts(dir)
	if err != nil {
		return err
	}
	st := &stack{cfg: cfg, dir: dir, bins: bins, logf: logf, lastRate: map[string]float64{}}
	// The harness's OTEL_* variables go to both servers: tracing on in the
	// run when an OTLP endpoint is set (deploy/docs/tracing.md, "Cost").
	var traced []string // what the report says of them: no header's value
	for _, name := range tracing.Variables {
		if v := getenv(name); v != "" {
			st.otel = append(st.otel, name+"="+v)
			if name == tracing.EnvHeaders || name == tracing.EnvTracesHeaders {
				v = "(set)"
			}
			traced = append(traced, name+"="+v)
		}
	}
	defer st.stop()
	if err := st.start(ctx); err != nil {
		return err
	}

	machine := describeMachine(ctx)
	rep := report{Command: commandLine(args), Machine: machine, CPUs: runtime.NumCPU(), Settings: []string{
		fmt.Sprintf("Load: wrk, %d connections over %d threads, %s per run after %s of warm-up, %d repetition(s), interleaved; spread over up to %s clients (tokens fetched beforehand)",
			cfg.Concurrency, cfg.Threads, wholeSeconds(cfg.Duration), wholeSeconds(cfg.Warmup), cfg.Reps, fmtInt(int64(cfg.LoadClients))),
		"Servers: authserver, resourceserver and ceiling as separate processes on 127.0.0.1, LOG_LEVEL=" + cmp.Or(cfg.LogLevel, "(default: info)") + ", " + describePipelining(cfg) + ", logs to files; " + describeTopology(cfg) + "; wrk on the same machine",
		describeBuild(ctx, bins),
	}}
	if len(traced) > 0 {
		rep.Settings = append(rep.Settings, "Tracing (both servers): "+strings.Join(traced, " "))
	}
	if cfg.PGOOut != "" {
		rep.Settings = append(rep.Settings, "Profiled (--pgo-out "+cfg.PGOOut+"): the token, introspect and me runs ran under the servers' CPU profiler, which costs them a little; measure without it")
	}
	if cfg.Profiles != "" {
		if err := os.MkdirAll(cfg.Profiles, 0o755); err != nil {
			return err
		}
		rep.Settings = append(rep.Settings, "Profiled (--profiles "+cfg.Profiles+"): every run at the largest registry but Hydra's ran under its server's CPU profiler, which costs it a little; measure without it")
	}
	if cfg.RedisCluster > 0 {
		for _, n := range st.redisNodes {
			rep.RedisNodes = append(rep.RedisNodes, n.label())
		}
		rep.Settings = append(rep.Settings, "Redis nodes: "+strings.Join(rep.RedisNodes, "; "))
	}
	// Hydra's clients and tokens, as many as the load is spread over at the
	// largest registry, where its scenarios run.
	var hydraData dataFiles
	if cfg.HydraBin != "" {
		n := min(cfg.LoadClients, cfg.Sizes[len(cfg.Sizes)-1])
		logf("creating %d Hydra clients and a token for each", n)
		hc, err := st.hydraClients(ctx, n)
		if err != nil {
			return err
		}
		if hydraData, err = writeHydraData(dir, hc); err != nil {
			return err
		}
		version := hydraVersion(ctx, cfg.HydraBin)
		rep.Hydra = fmt.Sprintf("Ory Hydra (%s, %s), started by the harness: serve all --dev, DSN=memory, opaque access tokens, LOG_LEVEL=warn, "+
			"public and admin APIs on 127.0.0.1; %s clients created through POST /admin/clients (client_credentials, client_secret_basic, scope %s), "+
			"one token fetched for each; its scenarios run at the largest registry, in the same repetitions as ours.",
			cfg.HydraBin, version, fmtInt(int64(n)), hydraScope)
		rep.Settings = append(rep.Settings, "Ory Hydra: "+cfg.HydraBin+" ("+version+"), serve all --dev, DSN=memory, LOG_LEVEL=warn; load over "+fmtInt(int64(n))+" of its clients")
	}
	emptyRedis, err := usedMemory(ctx, st.rdb)
	if err != nil {
		return err
	}
	for _, size := range cfg.Sizes {
		if err := st.reg.grow(ctx, size); err != nil {
			return err
		}
		// What the registry itself takes: the rate-limit logs of the runs
		// before expire within a minute, so they are left out.
		if err := clearRateLogs(ctx, st.rdb); err != nil {
			return err
		}
		used, err := usedMemory(ctx, st.rdb)
		if err != nil {
			return err
		}
		rep.Memory = append(rep.Memory, memorySample{Clients: size, Bytes: used - emptyRedis})
		logf("registry of %d clients: %d bytes of Redis, %.0f per client", size, used-emptyRedis, float64(used-emptyRedis)/float64(size))
		load, err := st.reg.loadSet(ctx, cfg.LoadClients)
		if err != nil {
			return err
		}
		info := redisInfo(ctx, st.rdb)
		rep.Registry = append(rep.Registry, fmt.Sprintf("Registry of %s client(s): %s; load spread over %s of them", fmtInt(int64(size)), info, fmtInt(int64(len(load)))))
		logf("registry of %d clients (%s); load over %d", size, info, len(load))
		data, err := writeData(dir, strconv.Itoa(size), load)
		if err != nil {
			return err
		}
		var hotData dataFiles
		if size == cfg.Sizes[len(cfg.Sizes)-1] && cfg.HotClients > 0 {
			hot, err := st.reg.hotSet(ctx, cfg.HotClients)
			if err != nil {
				return err
			}
			if hotData, err = writeData(dir, strconv.Itoa(size)+"-hot", hot); err != nil {
				return err
			}
		}
		if err := st.probe(ctx, load[0]); err != nil {
			return err
		}
		if err := st.dpopMint(ctx, load); err != nil {
			return err
		}
		for r := 1; r <= cfg.Reps; r++ {
			for _, sc := range cfg.Scenarios {
				d := data
				if isHydra(sc) {
					if size != cfg.Sizes[len(cfg.Sizes)-1] {
						continue
					}
					d = hydraData
				}
				if scenarioOf(sc).Hot != "" {
					if hotData == nil {
						continue
					}
					d = hotData
				}
				m, err := st.measureWhole(ctx, sc, size, r, scripts, d)
				if err != nil {
					return err
				}
				rep.Runs, st.lastRate[sc] = append(rep.Runs, m), m.Wrk.Throughput()
				logf("%-10s clients=%-7d rep %d: %8.0f req/s  p50 %-9s p99 %-9s p99.9 %-9s errors %d  server %s/req  redis %s/req  rss %s  machine share %s",
					sc, size, r, m.Wrk.Throughput(), fmtDur(m.Wrk.P50), fmtDur(m.Wrk.P99), fmtDur(m.Wrk.P999), m.Wrk.Status+m.Wrk.SocketErrors(),
					fmtDur(perRequest(m.ServerCPU, m.Wrk.Requests)), fmtDur(perRequest(m.RedisCPU, m.Wrk.Requests)), fmtBytes(m.PeakRSS),
					fmtPct(m.MachineShare(rep.CPUs)))
			}
		}
	}
	rep.Machine = append(rep.Machine, "Load average at the end: "+loadAverage())
	if cfg.PGOOut != "" {
		if err := writePGO(ctx, cfg.PGOOut, st.profiles, logf); err != nil {
			return err
		}
	}
	if cfg.Profiles != "" {
		if rep.CPUParts, err = cpuPartsOf(rep.Runs); err != nil {
			return err
		}
	}

	var out strings.Builder
	rep.write(&out, cfg)
	if _, err := io.WriteString(stdout, out.String()); err != nil {
		return err
	}
	if cfg.Out != "" {
		if err := writeResults(cfg.Out, topologyOf(cfg).Key, out.String()); err != nil {
			return err
		}
		logf("wrote the %s section of %s", topologyOf(cfg).Title, cfg.Out)
	}
	return nil
}

func wholeSeconds(d time.Duration) string {
	return strconv.Itoa(int((d+time.Second-1)/time.Second)) + " s"
}

// commandLine is the run's command as a shell takes it: go run
// ./deploy/bench and the arguments, each quoted where a shell would read
// it otherwise.
func commandLine(args []string) string {
	words := []string{"go", "run", "./deploy/bench"}
	for _, a := range args[1:] {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// shellQuote is a in single quotes unless it is made only of characters
// no shell treats specially.
func shellQuote(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=.,:/@%") == "" {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// stack is the processes under test and what talks to them.
type stack struct {
	cfg  config
	dir  string
	bins binaries
	logf func(string, ...any)
	// otel are the OTEL_* variables both servers are given (package tracing).
	otel []string

	auth, resource, ceiling *process
	// hydra is Ory Hydra (--hydra-bin; nil without), on its two URLs, and
	// the first of its clients (hydraClients), whose requests describe a
	// run Hydra failed (hydraProbe).
	hydra                         *process
	hydraPublicURL, hydraAdminURL string
	hydraFirst                    client
	// redisNodes are the redis-server processes: the single node, or the
	// Cluster's primaries then replicas.
	redisNodes                    []redisNode
	redisURL                      string
	authURL, resourceURL, ceilURL string
	rdb                           redis.UniversalClient
	reg                           *registry
	http                          *http.Client
	// me-dpop's bound clients, and each scenario's last req/s (dpopload.go).
	dpopSet  []boundClient
	lastRate map[string]float64
	// Under --pgo-out or --profiles: where each server's (its metrics
	// listener) and the ceiling's profiles are served; under --pgo-out,
	// the CPU profiles taken so far for writePGO (pgo.go).
	pprofURL map[string]string
	profiles map[string][]string
	// authTLS is the authserver that ends TLS itself, for the token-tls
	// scenarios (tlsload.go), with the roots and the client certificate
	// its load uses.
	authTLS       *process
	authTLSURL    string
	tlsRoots      *x509.CertPool
	tlsClientCert tls.Certificate
}

// start starts Redis, the authserver with fresh keys, the first client,
// the resourceserver and, with a real /me body, the ceiling.
func (s *stack) start(ctx context.Context) error {
	var err error
	s.http = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	// The harness's own client gets generous timeouts: its scans and bulk
	// writes run on a machine under load, where the servers' 1 s would
	// fail them.
	if s.cfg.RedisCluster > 0 {
		if s.redisNodes, s.redisURL, err = startCluster(ctx, s.dir, s.cfg.RedisCluster, s.cfg.RedisClusterReplicas, s.logf); err != nil {
			return err
		}
		var addrs []string
		for _, n := range s.redisNodes {
			if n.role == "primary" {
				addrs = append(addrs, n.addr)
			}
		}
		s.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, PoolSize: 64,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	} else {
		p, url, err := startRedis(ctx, s.dir)
		if err != nil {
			return err
		}
		s.redisNodes, s.redisURL = []redisNode{{proc: p, addr: strings.TrimSuffix(strings.TrimPrefix(url, "redis://"), "/0"), role: "node"}}, url
		opt, err := redis.ParseURL(s.redisURL)
		if err != nil {
			return err
		}
		opt.ReadTimeout, opt.WriteTimeout, opt.PoolSize = 30*time.Second, 30*time.Second, 64
		s.rdb = redis.NewClient(opt)
	}
	keys := filepath.Join(s.dir, "keys.json")
	if out, err := exec.CommandContext(ctx, s.bins.auth, "keys", "generate", "--out", keys).CombinedOutput(); err != nil {
		return fmt.Errorf("authserver keys generate: %w: %s", err, out)
	}
	// Each server's metrics listener on a free port: served as in
	// production, never in the way of another run's; no admin API (its
	// default port would be) but on the measured token service with
	// --admin, on a free port.
	env := []string{"REDIS_URL=" + s.redisURL, "METRICS_ADDR=127.0.0.1:0", "ADMIN_ADDR=off"}
	if !s.cfg.AutoPipeline.Auto() {
		env = append(env, "REDIS_AUTOPIPELINE="+s.cfg.AutoPipeline.String())
	}
	if s.cfg.LogLevel != "" {
		env = append(env, "LOG_LEVEL="+s.cfg.LogLevel)
	}
	env = append(env, s.otel...)

	s.pprofURL, s.profiles = map[string]string{}, map[string][]string{}
	authEnv, err := s.serverEnv(env, "authserver")
	if err != nil {
		return err
	}
	if s.cfg.Admin {
		port, err := freePort()
		if err != nil {
			return err
		}
		// (the last of a duplicated variable is the one a process gets)
		authEnv = append(authEnv, "ADMIN_ADDR=127.0.0.1:"+strconv.Itoa(port))
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.authURL = "http://127.0.0.1:" + strconv.Itoa(port)
	if s.auth, err = startProcess("authserver", s.dir, s.bins.auth, []string{"serve",
		"--addr", "127.0.0.1:" + strconv.Itoa(port), "--keys", keys, "--issuer", s.authURL, "--audience", audience}, authEnv); err != nil {
		return err
	}
	if err := waitHTTP(ctx, s.auth, s.authURL+"/readyz"); err != nil {
		return err
	}
	if err := s.startAuthTLS(ctx, env, keys); err != nil {
		return err
	}
	s.reg = &registry{
		authBin: s.bins.auth, redisURL: s.redisURL, store: clients.NewStore(s.rdb, "", nil), http: s.http,
		tokenURL: s.authURL + "/api/v1/oauth/token/", log: s.logf,
		boosted: map[string]bool{}, tokens: map[string]string{},
	}
	if err := s.reg.grow(ctx, 1); err != nil {
		return err
	}

	resourceEnv, err := s.serverEnv(env, "resourceserver")
	if err != nil {
		return err
	}
	if port, err = freePort(); err != nil {
		return err
	}
	s.resourceURL = "http://127.0.0.1:" + strconv.Itoa(port)
	if s.resource, err = startProcess("resourceserver", s.dir, s.bins.resource, []string{"serve",
		"--addr", "127.0.0.1:" + strconv.Itoa(port), "--jwks-url", s.authURL + "/.well-known/jwks.json",
		"--issuer", s.authURL, "--audience", audience, "--base-url", s.resourceURL}, resourceEnv); err != nil {
		return err
	}
	if err := waitHTTP(ctx, s.resource, s.resourceURL+"/readyz"); err != nil {
		return err
	}

	// The ceiling answers a real /me body.
	load, err := s.reg.loadSet(ctx, 1)
	if err != nil {
		return err
	}
	status, body, err := s.do(ctx, http.MethodGet, s.resourceURL+"/api/v1/me/", "Bearer "+load[0].Token, "")
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("GET /api/v1/me/ with a fresh token: %d %s %v", status, body, err)
	}
	bodyFile := filepath.Join(s.dir, "me.json")
	if err := os.WriteFile(bodyFile, body, 0o644); err != nil {
		return err
	}
	if port, err = freePort(); err != nil {
		return err
	}
	s.ceilURL = "http://127.0.0.1:" + strconv.Itoa(port)
	profArgs, err := s.ceilingArgs()
	if err != nil {
		return err
	}
	if s.ceiling, err = startProcess("ceiling", s.dir, s.bins.ceiling, append([]string{
		"--addr", "127.0.0.1:" + strconv.Itoa(port), "--body-file", bodyFile,
		"--keys", keys, "--issuer", s.authURL, "--audience", audience, "--autopipeline=" + s.cfg.AutoPipeline.String()}, profArgs...),
		[]string{"REDIS_URL=" + s.redisURL}); err != nil {
		return err
	}
	if err := waitHTTP(ctx, s.ceiling, s.ceilURL+"/healthz"); err != nil {
		return err
	}
	if s.cfg.HydraBin != "" {
		return s.startHydra(ctx)
	}
	return nil
}

func (s *stack) stop() {
	for _, p := range []*process{s.hydra, s.ceiling, s.resource, s.authTLS, s.auth} {
		p.stop()
	}
	if s.rdb != nil {
		s.rdb.Close()
	}
	for _, n := range s.redisNodes {
		n.proc.stop()
	}
}

// do makes one request and returns its status and body.
func (s *stack) do(ctx context.Context, method, url, auth, form string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(form))
	if err != nil {
		return 0, nil, err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

// probe sends one request of every scenario, as wrk will, and checks the
// answers, so that a misconfiguration fails here and not as a table of
// errors.
func (s *stack) probe(ctx context.Context, c client) error {
	check := func(what string, status int, body []byte, err error, want func(map[string]any) bool) error {
		if err != nil {
			return fmt.Errorf("probe %s: %w", what, err)
		}
		var v map[string]any
		if status != http.StatusOK || json.Unmarshal(body, &v) != nil || !want(v) {
			return fmt.Errorf("probe %s: %d %s", what, status, body)
		}
		return nil
	}
	st, b, err := s.do(ctx, http.MethodPost, s.authURL+"/api/v1/oauth/token/", c.basic(), "grant_type=client_credentials")
	if err := check("token", st, b, err, func(v map[string]any) bool { return v["access_token"] != nil }); err != nil {
		return err
	}
	st, b, err = s.do(ctx, http.MethodGet, s.resourceURL+"/api/v1/me/", "Bearer "+c.Token, "")
	if err := check("me", st, b, err, func(v map[string]any) bool { return v["client_id"] == c.ID }); err != nil {
		return err
	}
	st, b, err = s.do(ctx, http.MethodPost, s.authURL+"/api/v1/oauth/introspect/", c.basic(), "token="+c.Token+"&token_type_hint=access_token")
	if err := check("introspect", st, b, err, func(v map[string]any) bool { return v["active"] == true }); err != nil {
		return err
	}
	for _, p := range []string{"/bare", "/redis", "/admit"} {
		st, b, err = s.do(ctx, http.MethodGet, s.ceilURL+p, "Bearer "+c.Token, "")
		if err := check(p, st, b, err, func(map[string]any) bool { return true }); err != nil {
			return err
		}
	}
	st, b, err = s.do(ctx, http.MethodPost, s.ceilURL+"/sign", c.basic(), "grant_type=client_credentials")
	if err := check("/sign", st, b, err, func(v map[string]any) bool { return v["access_token"] != nil }); err != nil {
		return err
	}
	st, b, err = s.do(ctx, http.MethodPost, s.ceilURL+"/authsign", c.basic(), "grant_type=client_credentials")
	if err := check("/authsign", st, b, err, func(v map[string]any) bool { return v["access_token"] != nil }); err != nil {
		return err
	}
	st, b, err = s.do(ctx, http.MethodPost, s.ceilURL+"/authcheck", c.basic(), "token="+c.Token+"&token_type_hint=access_token")
	if err := check("/authcheck", st, b, err, func(v map[string]any) bool { return v["active"] == true }); err != nil {
		return err
	}
	return nil
}

// dataFiles are the wrk data files of one registry size, by scenario kind.
type dataFiles map[string]string

// writeData writes the load clients' credentials and tokens for wrk.
func writeData(dir, name string, load []client) (dataFiles, error) {
	var token, me, intro strings.Builder
	for _, c := range load {
		token.WriteString(c.basic() + "\n")
		me.WriteString(c.Token + "\n")
		intro.WriteString(c.basic() + "\t" + c.Token + "\n")
	}
	files := dataFiles{}
	for kind, content := range map[string]string{"token": token.String(), "me": me.String(), "introspect": intro.String()} {
		p := filepath.Join(dir, fmt.Sprintf("%s-%s.dat", kind, name))
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return nil, err
		}
		files[kind] = p
	}
	return files, nil
}
