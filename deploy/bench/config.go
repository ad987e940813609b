package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/partnerapi/authplatform/pkg/serveconfig"
)

// config is the harness's configuration, from flags.
type config struct {
	// Concurrency is the number of open connections wrk keeps busy.
	Concurrency int
	// Threads is wrk's thread count.
	Threads int
	// Duration is each measured run; Warmup runs before it, unmeasured.
	Duration time.Duration
	Warmup   time.Duration
	// Reps is how many times every scenario is measured; medians are reported.
	Reps int
	// Sizes are the numbers of clients in Redis at which the scenarios run,
	// ascending: the registry is grown from one size to the next.
	Sizes []int
	// LoadClients is how many clients the load is spread over (at most the
	// size): their credentials and tokens rotate in wrk's requests.
	LoadClients int
	// HotClients is how many clients the hot scenarios load (at the
	// largest registry only); they hold the highest limits.
	HotClients int
	// Out is a file to write the Markdown report to as well as stdout.
	Out string
	// AuthserverBin and ResourceserverBin are prebuilt binaries to measure
	// instead of building the module's.
	AuthserverBin     string
	ResourceserverBin string
	// LogLevel is the servers' LOG_LEVEL ("": their default, info); their
	// logs go to files in the work directory.
	LogLevel string
	// AutoPipeline is both servers' REDIS_AUTOPIPELINE: --autopipeline's
	// value, not given to them when auto (their default: on since
	// 2026-11-27; before, on with one node only), so that binaries of before the setting had
	// auto can be measured too.
	AutoPipeline serveconfig.Pipelining
	// RedisCluster is the number of primaries of a Redis Cluster to run
	// instead of the single redis-server (0: the single node), each with
	// RedisClusterReplicas replicas.
	RedisCluster, RedisClusterReplicas int
	// Admin runs the token service with its admin listener on (a free
	// loopback port), as a deployment with the console has it: the
	// console's usage sampler then reads every client's limiter windows a
	// second after each minute starts (clients.SampleUsage), beside the
	// measured load. Off, the default, as in a deployment without it.
	Admin bool
	// Install lets the harness apt-get install a missing wrk or redis-server.
	Install bool
	// Keep leaves the work directory (logs, data files) in place.
	Keep bool
	// Quick is the CI setting: short runs on a small registry.
	Quick bool
	// Scenarios are the scenarios to run, in the table's order (default:
	// all of them; the Hydra ones only with HydraBin).
	Scenarios []string
	// HydraBin is an Ory Hydra binary (built by deploy/bench/hydra/build.sh)
	// to start and measure side by side with the authserver: the
	// hydra-token and hydra-introspect scenarios ("": no Hydra).
	HydraBin string
	// PGOOut is a directory to write the servers' CPU profiles under, as
	// PGOOut/authserver/release.pgo (the token and introspection runs)
	// and PGOOut/resourceserver/release.pgo (the /me runs): the profiles
	// the release build gives go build -pgo ("": none). The
	// servers then run with PPROF=true, and each of those runs is profiled
	// for its --duration.
	PGOOut string
	// Profiles is a directory to keep a CPU profile of every run at the
	// largest registry in, of the process serving it (the servers, the
	// ceiling; not Hydra), for the report's "Where the CPU goes" ("":
	// none).
	Profiles string
}

// quickSettings are what --quick changes, unless a flag says otherwise.
var quickSettings = map[string]string{
	"concurrency": "8", "duration": "2s", "warmup": "0s", "reps": "1", "clients": "1,100,1000", "load-clients": "100",
}

// helpRequested is parseConfig's answer to -h: the usage text, which main
// prints to stdout before exiting 0.
type helpRequested struct{ usage string }

func (h *helpRequested) Error() string { return h.usage }

func parseConfig(args []string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.IntVar(&cfg.Concurrency, "concurrency", 64, "open connections kept busy")
	fs.IntVar(&cfg.Threads, "threads", 2, "wrk threads")
	fs.DurationVar(&cfg.Duration, "duration", 20*time.Second, "measured time of each run")
	fs.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "unmeasured load before each run")
	fs.IntVar(&cfg.Reps, "reps", 3, "repetitions of every scenario (medians are reported)")
	sizes := fs.String("clients", "1,1000,100000", "comma-separated numbers of clients in Redis, ascending")
	fs.IntVar(&cfg.LoadClients, "load-clients", 1000, "clients the load is spread over (at most the registry size)")
	fs.IntVar(&cfg.HotClients, "hot-clients", 10, "clients of the token-hot and me-hot scenarios, at the largest registry (0: none)")
	fs.StringVar(&cfg.Out, "out", "", "also write the Markdown report to this file")
	fs.StringVar(&cfg.AuthserverBin, "authserver-bin", "", "prebuilt authserver to measure (default: build ./authserver)")
	fs.StringVar(&cfg.ResourceserverBin, "resourceserver-bin", "", "prebuilt resourceserver to measure (default: build ./resourceserver)")
	fs.StringVar(&cfg.LogLevel, "log-level", "", "the servers' LOG_LEVEL (default: theirs, info)")
	fs.Var(&cfg.AutoPipeline, "autopipeline", "both servers' REDIS_AUTOPIPELINE: auto (their default: on), true or false; alone: true")
	fs.IntVar(&cfg.RedisCluster, "redis-cluster", 0, "run a Redis Cluster of this many primaries instead of one redis-server (0: one node)")
	fs.IntVar(&cfg.RedisClusterReplicas, "redis-cluster-replicas", 0, "replicas per primary of --redis-cluster")
	fs.BoolVar(&cfg.Admin, "admin", false, "run the token service with its admin listener and console on (their usage sampler reads every client's limiter windows once a minute)")
	fs.BoolVar(&cfg.Install, "install", false, "apt-get install wrk and redis-server when missing")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the work directory (logs, wrk scripts and data)")
	fs.BoolVar(&cfg.Quick, "quick", false, "CI setting: "+quickSummary())
	fs.StringVar(&cfg.HydraBin, "hydra-bin", "", "also start this Ory Hydra binary (deploy/bench/hydra/build.sh) and measure its token and introspection endpoints side by side")
	fs.StringVar(&cfg.PGOOut, "pgo-out", "", "profile the servers during the token, introspect and me runs and write DIR/authserver/release.pgo and DIR/resourceserver/release.pgo (--pgo-out . from the module's root refreshes the profiles the binaries are built with)")
	fs.StringVar(&cfg.Profiles, "profiles", "", "profile the process serving every run at the largest registry (the servers, the ceiling for the ceilings and floors; not Hydra), keep the profiles in DIR and add \"Where the CPU goes\" to the report: each scenario's CPU per request by part, and each endpoint's over its floor's")
	only := fs.String("scenarios", strings.Join(ownScenarios(), ","), "comma-separated scenarios to run (for profiling one endpoint; hydra-token and hydra-introspect need --hydra-bin)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var usage strings.Builder
			fs.SetOutput(&usage)
			fs.PrintDefaults()
			return config{}, &helpRequested{usage: "usage: go run ./deploy/bench [flags]\n" + usage.String()}
		}
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.Quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range quickSettings {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					return config{}, err
				}
			}
		}
	}
	var err error
	if cfg.Sizes, err = parseSizes(*sizes); err != nil {
		return config{}, err
	}
	scenariosSet := false
	fs.Visit(func(f *flag.Flag) { scenariosSet = scenariosSet || f.Name == "scenarios" })
	if cfg.HydraBin != "" && !scenariosSet {
		// Every scenario, Hydra's included.
		*only = strings.Join(scenarioOrder, ",")
	}
	if cfg.Scenarios, err = parseScenarios(*only); err != nil {
		return config{}, err
	}
	return cfg, cfg.Validate()
}

// ownScenarios are the scenarios that measure the platform and its
// ceilings: every one but Hydra's.
func ownScenarios() []string {
	var out []string
	for _, sc := range scenarioOrder {
		if !isHydra(sc) {
			out = append(out, sc)
		}
	}
	return out
}

func quickSummary() string {
	keys := make([]string, 0, len(quickSettings))
	for k := range quickSettings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = "--" + k + " " + quickSettings[k]
	}
	return strings.Join(parts, " ")
}

func parseSizes(s string) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--clients: %q is not a whole number", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// parseScenarios reads a list of scenario names and returns them in the
// table's order.
func parseScenarios(s string) ([]string, error) {
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(scenarioOrder, f) {
			return nil, fmt.Errorf("--scenarios: unknown %q (known: %s)", f, strings.Join(scenarioOrder, ", "))
		}
		want[f] = true
	}
	var out []string
	for _, sc := range scenarioOrder {
		if want[sc] {
			out = append(out, sc)
		}
	}
	return out, nil
}

// Validate reports every problem at once.
func (c config) Validate() error {
	var errs []error
	if c.Threads < 1 {
		errs = append(errs, errors.New("--threads must be at least 1"))
	}
	if c.Concurrency < c.Threads {
		errs = append(errs, errors.New("--concurrency must be at least --threads (wrk gives each thread its share)"))
	}
	if c.Duration < time.Second {
		errs = append(errs, errors.New("--duration must be at least 1s"))
	}
	if c.profiling() && c.Duration > maxProfile {
		errs = append(errs, fmt.Errorf("--pgo-out and --profiles profile each run for its --duration: at most %s (the servers' WriteTimeout bounds a profile)", maxProfile))
	}
	if c.Warmup < 0 {
		errs = append(errs, errors.New("--warmup must not be negative"))
	}
	if c.Reps < 1 {
		errs = append(errs, errors.New("--reps must be at least 1"))
	}
	if c.LoadClients < 1 {
		errs = append(errs, errors.New("--load-clients must be at least 1"))
	}
	if c.RedisCluster < 0 || c.RedisCluster > 64 {
		errs = append(errs, errors.New("--redis-cluster must be 0-64"))
	}
	if c.RedisClusterReplicas < 0 || c.RedisClusterReplicas > 5 {
		errs = append(errs, errors.New("--redis-cluster-replicas must be 0-5"))
	}
	if c.RedisClusterReplicas > 0 && c.RedisCluster == 0 {
		errs = append(errs, errors.New("--redis-cluster-replicas needs --redis-cluster"))
	}
	for i, n := range c.Sizes {
		if n < 1 || n > 1_000_000 {
			errs = append(errs, fmt.Errorf("--clients: %d must be 1-1000000", n))
		}
		if i > 0 && n <= c.Sizes[i-1] {
			errs = append(errs, errors.New("--clients must be ascending"))
		}
	}
	if c.HydraBin == "" {
		for _, sc := range c.Scenarios {
			if isHydra(sc) {
				errs = append(errs, fmt.Errorf("--scenarios: %s needs --hydra-bin", sc))
			}
		}
	}
	if len(c.Sizes) == 0 {
		errs = append(errs, errors.New("--clients needs at least one size"))
	}
	return errors.Join(errs...)
}
