//go:build unix

package e2etest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Edge is what StartEdge runs deploy/Caddyfile with: the file the compose
// edge uses, switched to static upstreams on loopback.
type Edge struct {
	// Bin is the caddy to run ("": the pinned one where it is built, else
	// the one on PATH; see edgeCaddy).
	Bin string
	// Home is the edge's HOME; its Caddy directories are made under it.
	Home string
	// Bind and Port are where it listens (Bind "": 127.0.0.1).
	Bind string
	Port int
	// Auth and Resource are the pools' host:port, checked on /readyz.
	Auth, Resource []string
	// Env is more environment (EDGE_TRACING=on and the OTEL_* variables).
	Env []string
}

// StartEdge runs caddy with deploy/Caddyfile as e describes and returns the
// process; WaitOK tells when it routes.
func StartEdge(t testing.TB, e Edge) *Process {
	t.Helper()
	if e.Bind == "" {
		e.Bind = "127.0.0.1"
	}
	if e.Bin == "" {
		e.Bin = edgeCaddy(t)
	}
	caddyfile := filepath.Join(RepoRoot(t), "deploy", "Caddyfile")
	caddyHome := filepath.Join(e.Home, "caddy")
	if err := os.MkdirAll(caddyHome, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(BaseEnv(caddyHome),
		"XDG_CONFIG_HOME="+filepath.Join(caddyHome, "config"),
		"XDG_DATA_HOME="+filepath.Join(caddyHome, "data"),
		"CADDY_ADMIN=off",
		"EDGE_BIND="+e.Bind,
		"EDGE_PORT="+strconv.Itoa(e.Port),
		"UPSTREAMS=static",
		"AUTH_UPSTREAMS="+strings.Join(e.Auth, " "),
		"RESOURCE_UPSTREAMS="+strings.Join(e.Resource, " "),
		"CADDY_COMPAT="+CaddyCompat(t, e.Bin),
	)
	return StartProcess(t, "edge", append(env, e.Env...), e.Bin, "run", "--config", caddyfile, "--adapter", "caddyfile")
}

// CaddyCompat is the CADDY_COMPAT of deploy/Caddyfile for the caddy at bin:
// "2.6" for Caddy 2.6 (Debian bookworm's), else "current".
func CaddyCompat(t testing.TB, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("caddy version: %v", err)
	}
	if v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v"); strings.HasPrefix(v, "2.6.") {
		return "2.6"
	}
	return "current"
}
