//go:build unix

package e2etest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ToolBinary is the program name of module, at the version the tool module
// in dir (a path from the repository's root) pins, which script (a path
// from the repository's root) builds into the user's cache:
// ${XDG_CACHE_HOME:-$HOME/.cache}/partnerapi/NAME-VERSION/NAME. Missing, the
// test is skipped with the command that builds it, but fails under CI=true
// (.ci/run builds every such tool first).
func ToolBinary(t testing.TB, dir, module, name, script string) string {
	t.Helper()
	bin, err := toolPath(t, dir, module, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); errors.Is(err, os.ErrNotExist) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing and CI=true forbids skipping: .ci/run builds it with bash %s", bin, script)
		}
		t.Skipf("%s is missing: build it with bash %s (minutes the first time)", bin, script)
	}
	return bin
}

// toolPath is where ToolBinary looks for name.
func toolPath(t testing.TB, dir, module, name string) (string, error) {
	list := exec.Command("go", "list", "-m", "-f", "{{.Version}}", module)
	list.Dir = filepath.Join(RepoRoot(t), filepath.FromSlash(dir))
	out, err := list.Output()
	if err != nil {
		return "", errors.New("the pinned " + name + " version (go list -m in " + list.Dir + "): " + err.Error())
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "partnerapi", name+"-"+strings.TrimSpace(string(out)), name), nil
}

// caddyTool is the module that pins the edge's Caddy, the compose file's
// caddy image's version, and the script that builds it.
const (
	caddyTool   = "deploy/e2e/e2etest/caddytool"
	caddyScript = "deploy/e2e/e2etest/build-caddy.sh"
)

// Caddy is the edge the suites run: the Caddy that caddytool pins (the
// compose file's version, with the tracing module), built by
// build-caddy.sh; missing, it fails under CI=true and is skipped outside.
func Caddy(t testing.TB) string {
	t.Helper()
	return ToolBinary(t, caddyTool, "github.com/caddyserver/caddy/v2", "caddy", caddyScript)
}

// edgeCaddy is the Caddy StartEdge runs when Edge.Bin is empty: the pinned
// one where it is built (always under CI=true, which fails without it),
// else Debian's on PATH (deploy/Caddyfile's CADDY_COMPAT=2.6), so that a
// developer's quick run needs no build of Caddy. The edge's retries differ
// between the two: Caddy 2.6 never retries a POST that found no upstream
// up, nor sends a retried body (caddyserver/caddy#7546, fixed in 2.11.2);
// TestRollingRestart needs the pinned one (Caddy).
func edgeCaddy(t testing.TB) string {
	t.Helper()
	if os.Getenv("CI") == "true" {
		return Caddy(t)
	}
	if bin, err := toolPath(t, caddyTool, "github.com/caddyserver/caddy/v2", "caddy"); err == nil {
		if _, err := os.Stat(bin); err == nil {
			return bin
		}
	}
	RequireCommand(t, "caddy")
	return "caddy"
}
