package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxProfile is the longest CPU profile --pgo-out takes: a profile is one
// answer of the servers' metrics listener, which their WriteTimeout (30 s)
// bounds.
const maxProfile = 29 * time.Second

// profiling reports whether the processes serve their profiles: under
// --pgo-out or --profiles.
func (c config) profiling() bool { return c.PGOOut != "" || c.Profiles != "" }

// serverEnv is env for the server called name; under --pgo-out or
// --profiles with its profiles on (PPROF) on a metrics port of its own
// that the harness picks and remembers (the later METRICS_ADDR counts).
func (s *stack) serverEnv(env []string, name string) ([]string, error) {
	if !s.cfg.profiling() {
		return env, nil
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.pprofURL[name] = "http://127.0.0.1:" + strconv.Itoa(port)
	return append(slices.Clip(env), "PPROF=true", "METRICS_ADDR=127.0.0.1:"+strconv.Itoa(port)), nil
}

// ceilingArgs are the ceiling's flags for its profiles: under --pgo-out or
// --profiles, --pprof-addr on a port the harness picks and remembers.
func (s *stack) ceilingArgs() ([]string, error) {
	if !s.cfg.profiling() {
		return nil, nil
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.pprofURL["ceiling"] = "http://127.0.0.1:" + strconv.Itoa(port)
	return []string{"--pprof-addr", "127.0.0.1:" + strconv.Itoa(port)}, nil
}

// profile takes a CPU profile of the process serving sc for the length of
// the run that starts after it: under --pgo-out for the scenarios whose
// row says PGO (remembered for writePGO), under --profiles for every
// scenario but Hydra's at the largest registry (kept as
// DIR/<scenario>-<rep>.pb.gz). wait returns once the profile is written,
// with its path under --profiles ("" otherwise); runs that take none get
// a wait that returns at once.
func (s *stack) profile(ctx context.Context, sc string, size, rep int) (wait func() (string, error)) {
	pgo := s.cfg.PGOOut != "" && scenarioOf(sc).PGO
	kept := s.cfg.Profiles != "" && servingProcess(sc) != "" && size == s.cfg.Sizes[len(s.cfg.Sizes)-1]
	if !pgo && !kept {
		return func() (string, error) { return "", nil }
	}
	server := servingProcess(sc)
	file := filepath.Join(s.dir, fmt.Sprintf("cpu-%s-%d-%d.pb.gz", sc, size, rep))
	if kept {
		file = filepath.Join(s.cfg.Profiles, fmt.Sprintf("%s-%d.pb.gz", sc, rep))
	}
	url := s.pprofURL[server] + "/debug/pprof/profile?seconds=" + strconv.Itoa(int(s.cfg.Duration/time.Second))
	done := make(chan error, 1)
	go func() { done <- fetchProfile(ctx, url, file) }()
	return func() (string, error) {
		if err := <-done; err != nil {
			return "", fmt.Errorf("CPU profile of %s during %s: %w", server, sc, err)
		}
		if pgo {
			s.profiles[server] = append(s.profiles[server], file)
		}
		if !kept {
			return "", nil
		}
		return file, nil
	}
}

func fetchProfile(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d: %.200s", url, res.StatusCode, body)
	}
	return os.WriteFile(file, body, 0o644)
}

// releaseProfile is the path, from the module's root, of the CPU profile
// the server called name is built with (deploy/Dockerfile's go build
// -pgo). It is not the main package's default.pgo, which go build, go run
// and go test would take on their own: each such build compiles the whole
// dependency tree once more with the profile, and a fresh machine's first
// go test ./... compiled it four times (deploy/docs/testing.md).
func releaseProfile(name string) string { return filepath.Join(name, "release.pgo") }

// writePGO merges each server's profiles (go tool pprof -proto: the
// toolchain's own merge, as the PGO guide does it) into
// dir/<server>/release.pgo (releaseProfile).
func writePGO(ctx context.Context, dir string, profiles map[string][]string, logf func(string, ...any)) error {
	for _, server := range slices.Sorted(maps.Keys(profiles)) {
		out := filepath.Join(dir, releaseProfile(server))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-proto"}, profiles[server]...)...)
		merged, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("go tool pprof -proto (%s): %w", server, err)
		}
		if err := os.WriteFile(out, merged, 0o644); err != nil {
			return err
		}
		logf("wrote %s (%d profiles merged, %d bytes)", out, len(profiles[server]), len(merged))
	}
	return nil
}

// describeBuild says which profile each binary under test was built with
// (go version -m: the build's -pgo setting), for the report's settings:
// the harness builds the module's servers with their release profiles, so
// a measurement of them is a measurement of their profiles.
func describeBuild(ctx context.Context, bins binaries) string {
	var parts []string
	for _, b := range []struct{ name, path string }{{"authserver", bins.auth}, {"resourceserver", bins.resource}, {"ceiling", bins.ceiling}} {
		parts = append(parts, b.name+" "+pgoOf(ctx, b.path))
	}
	return "Build (profile-guided optimization): " + strings.Join(parts, ", ")
}

// pgoOf is the profile path binary was built with, by its last two path
// elements ("authserver/release.pgo"), "without a profile", or "unknown"
// when go version -m cannot read it.
func pgoOf(ctx context.Context, binary string) string {
	out, err := exec.CommandContext(ctx, "go", "version", "-m", binary).Output()
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(out)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "build\t-pgo="); ok {
			return "with " + filepath.Join(filepath.Base(filepath.Dir(v)), filepath.Base(v))
		}
	}
	return "without a profile"
}
