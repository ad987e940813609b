//go:build unix

package console

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

// axeSource is axe-core's axe.min.js, installed by `npm ci` from node/'s
// committed package-lock.json into a cache entry named by the digest of
// package.json and package-lock.json (a fresh directory renamed into
// place: concurrent runs at worst install twice).
func axeSource(t *testing.T) string {
	t.Helper()
	src := filepath.Join(e2etest.RepoRoot(t), "deploy", "e2e", "console", "node")
	h := sha256.New()
	files := map[string][]byte{}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
		h.Write(b)
	}
	entry := filepath.Join(e2etest.CacheDir("npm"), "console-"+hex.EncodeToString(h.Sum(nil))[:16])
	axe := filepath.Join(entry, "node_modules", "axe-core", "axe.min.js")
	if b, err := os.ReadFile(axe); err == nil {
		return string(b)
	}
	e2etest.RequireCommand(t, "npm")
	if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(entry), "console-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci (deploy/e2e/console/node): %v\n%s", err, out)
	}
	if err := os.Rename(tmp, entry); err != nil && !os.IsExist(err) {
		if _, serr := os.Stat(axe); serr != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(axe)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
