package sdk

import (
	"bytes"
	"encoding/json"
	"go/version"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// sdkModule is the SDK's own module, nested in this repository: `go test
// ./...` at the root does not enter it, so TestSDKModule does.
const sdkModule = "github.com/partnerapi/authplatform/pkg/partnerclient"

// maxSDKGo is the newest go directive the SDK (and each module it
// requires) may declare, so partners on older toolchains can build it.
const maxSDKGo = "1.22"

// sdkAllowed are the only modules the SDK and its tests may import besides
// the standard library.
var sdkAllowed = []string{"golang.org/x/oauth2", "golang.org/x/sync"}

// TestSDKModule runs the SDK module's own checks with this toolchain: go vet
// (whose stdversion check fails on a standard library symbol newer than the
// go directive), its tests, go mod tidy -diff; and checks that it declares
// go <= 1.22, requires only golang.org/x/oauth2 and golang.org/x/sync at
// versions that declare go <= 1.22 too, and that its packages and tests
// import nothing else besides the standard library.
func TestSDKModule(t *testing.T) {
	redistest.Long(t)                 // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	goBin, err := exec.LookPath("go") // go test puts its own GOROOT/bin first in PATH
	if err != nil {
		t.Fatalf("the go command is needed to check the SDK module: %v", err)
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "pkg", "partnerclient"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s in pkg/partnerclient: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
		}
		return out
	}

	var mod struct {
		Module  struct{ Path string }
		Go      string
		Require []struct{ Path, Version string }
		Replace []any
	}
	if err := json.Unmarshal(run("mod", "edit", "-json"), &mod); err != nil {
		t.Fatal(err)
	}
	if mod.Module.Path != sdkModule {
		t.Errorf("module %q, want %q", mod.Module.Path, sdkModule)
	}
	if mod.Go == "" || version.Compare("go"+mod.Go, "go"+maxSDKGo) > 0 {
		t.Errorf("go directive %q, want at most %s", mod.Go, maxSDKGo)
	}
	if len(mod.Replace) != 0 {
		t.Errorf("pkg/partnerclient/go.mod has replace directives, which partners' builds ignore: %v", mod.Replace)
	}
	var required []string
	for _, r := range mod.Require {
		required = append(required, r.Path)
	}
	slices.Sort(required)
	if !slices.Equal(required, sdkAllowed) {
		t.Errorf("pkg/partnerclient requires %q, want exactly %q", required, sdkAllowed)
	}

	// The go directive of each required module, as the module cache has it.
	for _, line := range strings.Split(strings.TrimSpace(string(run(append([]string{"list", "-m", "-f", "{{.Path}} {{.Version}} {{.GoVersion}}"}, sdkAllowed...)...))), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || version.Compare("go"+f[2], "go"+maxSDKGo) > 0 {
			t.Errorf("required module %q: its go directive must be at most %s (pick an older version)", line, maxSDKGo)
		}
	}

	// Every non-standard package the SDK, its example and its tests build.
	// A test variant is listed as "path [path.test]", a test main as
	// "path.test", an external test package as "path_test".
	for _, line := range strings.Split(string(run("list", "-deps", "-test", "-f", "{{if not .Standard}}{{.ImportPath}}\n{{end}}", "./...")), "\n") {
		if line == "" {
			continue
		}
		p, _, _ := strings.Cut(line, " ")
		p = strings.TrimSuffix(strings.TrimSuffix(p, ".test"), "_test")
		ok := p == sdkModule || strings.HasPrefix(p, sdkModule+"/")
		for _, m := range sdkAllowed {
			ok = ok || p == m || strings.HasPrefix(p, m+"/")
		}
		if !ok {
			t.Errorf("the SDK module builds %q: only the standard library, %q and the SDK itself are allowed", p, sdkAllowed)
		}
	}

	run("mod", "tidy", "-diff")
	run("vet", "./...")
	args := []string{"test", "-count=1", "./..."}
	if raceEnabled { // go test -race at the root: the SDK's tests too
		args = slices.Insert(args, 1, "-race")
	}
	t.Logf("go %s in pkg/partnerclient:\n%s", strings.Join(args, " "), run(args...))
}
