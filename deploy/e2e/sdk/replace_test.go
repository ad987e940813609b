package sdk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSDKReplaceRecipe runs the quickstart guide's way of using the SDK
// before it is published (resourceserver/apidocs/guides/quickstart.md): a
// partner's module with the SDK's directory copied to
// ./third_party/partnerclient, `go mod edit -require ... -replace ...`,
// `go mod tidy`, and a program importing the SDK builds. The SDK's
// requirements come from the module cache, or the Go module proxy on a
// machine that has not fetched them yet (nothing else in the repository
// requires the SDK's x/oauth2 version, nor what its tests need for tidy).
func TestSDKReplaceRecipe(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	guide, err := os.ReadFile(filepath.Join("..", "..", "..", "resourceserver", "apidocs", "guides", "quickstart.md"))
	if err != nil {
		t.Fatal(err)
	}
	const edit = "go mod edit -require=github.com/partnerapi/authplatform/pkg/partnerclient@v0.0.0 \\\n  -replace=github.com/partnerapi/authplatform/pkg/partnerclient=./third_party/partnerclient"
	if !strings.Contains(string(guide), edit) {
		t.Fatalf("the quickstart guide no longer says %q", edit)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "third_party", "partnerclient"), os.DirFS(filepath.Join("..", "..", "..", "pkg", "partnerclient"))); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"go.mod": "module example.com/partner\n\ngo 1.22\n",
		"main.go": `package main

import (
	"fmt"

	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

func main() { fmt.Println(partnerclient.ClientAssertionType) }
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
		}
		return string(out)
	}
	run("mod", "edit", "-require=github.com/partnerapi/authplatform/pkg/partnerclient@v0.0.0",
		"-replace=github.com/partnerapi/authplatform/pkg/partnerclient=./third_party/partnerclient")
	run("mod", "tidy")
	if out := run("run", "."); out != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer\n" {
		t.Fatalf("the program printed %q", out)
	}
}
