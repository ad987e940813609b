//go:build unix

package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

// Where the chart and Helm's tool module are, from the repository root.
const (
	chartDir = "deploy/helm/partnerapi"
	toolDir  = "deploy/helm/tool"
	// The release every rendering uses, in this namespace.
	release   = "acme"
	namespace = "partner"
)

// helmBin is the pinned Helm binary once it has been found and has said
// its version, for the test binary's later helm runs.
var helmBin struct {
	mu   sync.Mutex
	path string
}

// helm returns the path of the Helm binary that deploy/helm/tool/go.mod
// pins, in the user's cache (e2etest.ToolBinary: build-helm.sh puts it
// there). Without it the test is skipped, as deploy/e2e/tracing is
// without its Jaeger: building Helm and client-go takes minutes on two
// cores, more than a newcomer's whole first run of the README's test
// command should. Under CI=true, where .ci/run builds it first, its
// absence is a failure. The binary must say it is the pinned version.
func helm(t *testing.T) string {
	t.Helper()
	helmBin.mu.Lock()
	defer helmBin.mu.Unlock()
	if helmBin.path != "" {
		return helmBin.path
	}
	bin := e2etest.ToolBinary(t, toolDir, "helm.sh/helm/v3", "helm", "deploy/helm/build-helm.sh")
	// ToolBinary's path ends in helm-VERSION/helm.
	version := strings.TrimPrefix(filepath.Base(filepath.Dir(bin)), "helm-")
	got, err := exec.Command(bin, "version", "--template", "{{.Version}}").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	if strings.TrimSpace(string(got)) != version {
		t.Fatalf("%s says it is Helm %s, the tool module pins %s: remove it and run build-helm.sh", bin, got, version)
	}
	helmBin.path = bin
	return bin
}

// runHelm runs helm with args in the repository root and returns its
// standard output, or its standard error in err.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	cmd.Dir = e2etest.RepoRoot(t)
	// Helm's own directories in the test's: nothing read from or written
	// to the user's Helm configuration.
	home := t.TempDir()
	cmd.Env = append(e2etest.BaseEnv(home),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}

// valuesFile writes a values file for one case and returns its path.
func valuesFile(t *testing.T, values string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// lint runs helm lint --strict over the chart with values.
func lint(t *testing.T, values string) {
	t.Helper()
	if out, err := runHelm(t, "lint", "--strict", chartDir, "--namespace", namespace, "-f", valuesFile(t, values)); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(out, "0 chart(s) failed") {
		t.Fatalf("helm lint --strict:\n%s", out)
	}
}

// template renders the chart with values, as an install of release in
// namespace would (test hooks included), and decodes every object.
func template(t *testing.T, values string) *rendered {
	t.Helper()
	out, err := runHelm(t, "template", release, chartDir, "--namespace", namespace, "-f", valuesFile(t, values))
	if err != nil {
		t.Fatal(err)
	}
	r, err := decodeAll([]byte(out))
	if err != nil {
		t.Fatalf("%v\n--- rendered ---\n%s", err, out)
	}
	return r
}
