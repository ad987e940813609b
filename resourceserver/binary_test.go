package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// maxBinarySize is the resource server's size budget as deploy/Dockerfile
// builds it (go build -tags grpcnotrace -trimpath -ldflags='-s -w'
// -pgo=resourceserver/release.pgo):
// 35 MB. Without the tag gRPC, which the OTLP exporter links, brings
// golang.org/x/net/trace's template pages, whose execution keeps every
// exported method (56 MB unstripped; 37.5 MB unstripped with it). Validating the OpenAPI document with
// kin-openapi and rendering the API reference with text/template at
// start-up took it to 54 MB.
const maxBinarySize = 35_000_000

// The resource server links neither kin-openapi nor the template engine's
// executor: both run at build time only (go generate in apidocs). Beyond
// their own size, a reachable call of a method by a computed name, which
// text/template makes, has the linker keep every exported method of every
// linked type (go-redis's command methods alone were four times their
// size), so no linked function may be such a call (the linker's
// ReflectMethod mark, printed by -dumpdep). html/template and
// text/template's parser are linked (gin and net/rpc import them; net/rpc
// parses its debug page at init), never executed.
func TestBinaryLinksNoRendering(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	if testing.Short() {
		t.Skip("builds the binary")
	}
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for pkg := range strings.Lines(string(deps)) {
		if strings.HasPrefix(pkg, "github.com/getkin/kin-openapi") {
			t.Errorf("the resource server imports %s", strings.TrimSpace(pkg))
		}
	}

	// Both builds compile as deploy/Dockerfile does (static, trimmed, with
	// the release profile), so that they share the build cache's packages
	// with each other; only the links differ.
	build := func(out, ldflags string) *exec.Cmd {
		cmd := exec.Command("go", "build", "-tags", "grpcnotrace", "-trimpath", "-ldflags="+ldflags, "-pgo=release.pgo", "-o", out, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		return cmd
	}
	bin := filepath.Join(t.TempDir(), "resourceserver")
	// The linker's dependency graph: "from -> to" lines, its marks after
	// the caller's name. The symbols are kept, for the check below.
	graph, err := build(bin, "-dumpdep").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, graph[max(0, len(graph)-4096):])
	}
	reflectMethods := map[string]bool{}
	lines := bufio.NewScanner(bytes.NewReader(graph))
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		from, _, ok := strings.Cut(lines.Text(), " -> ")
		if name, marked := strings.CutSuffix(from, " <ReflectMethod>"); ok && marked {
			reflectMethods[name] = true
		}
	}
	for name := range reflectMethods {
		t.Errorf("%s calls a method by a computed name: the linker keeps every exported method", name)
	}

	// The shipped build, kept in the user's cache between runs: go build
	// leaves a binary whose build ID says it is up to date as it is, and
	// links nothing. One per checkout (its directory's hash).
	shipped := filepath.Join(t.TempDir(), "resourceserver")
	wd, _ := os.Getwd()
	if cache, err := os.UserCacheDir(); err == nil {
		sum := sha256.Sum256([]byte(wd))
		shipped = filepath.Join(cache, "authplatform-e2e", "size", hex.EncodeToString(sum[:8]), "resourceserver")
		if err := os.MkdirAll(filepath.Dir(shipped), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := build(shipped, "-s -w").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	fi, err := os.Stat(shipped)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > maxBinarySize {
		t.Errorf("binary of %d bytes, over its budget of %d", fi.Size(), maxBinarySize)
	}
	if runtime.GOOS != "linux" {
		return
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "github.com/getkin/kin-openapi") || strings.HasPrefix(s.Name, "text/template.(*state).") {
			linked = append(linked, s.Name)
		}
	}
	if len(linked) > 0 {
		t.Errorf("the binary links %d functions of kin-openapi or text/template's executor, such as %s", len(linked), linked[0])
	}
}
