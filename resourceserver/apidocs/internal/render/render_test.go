package render_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/partnerapi/authplatform/resourceserver/apidocs/internal/pages"
	"github.com/partnerapi/authplatform/resourceserver/apidocs/internal/render"
)

// copyInputs copies what Render reads (openapi.json, guides/) of the
// apidocs directory into a temporary one.
func copyInputs(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	names, err := filepath.Glob("../../guides/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "guides"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range append(names, "../../openapi.json") {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(src))
		if filepath.Ext(src) == ".md" {
			dst = filepath.Join(dir, "guides", filepath.Base(src))
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Write writes every file Render makes and Diff finds nothing after it;
// Diff names a stale, a missing and a stray file.
func TestWriteAndDiff(t *testing.T) {
	dir := copyInputs(t)
	if diffs, err := render.Diff(dir); err != nil || len(diffs) != 5 {
		t.Fatalf("Diff before Write: %q, %v; want the 5 files missing", diffs, err)
	}
	if err := render.Write(dir); err != nil {
		t.Fatal(err)
	}
	if diffs, err := render.Diff(dir); err != nil || len(diffs) != 0 {
		t.Fatalf("Diff after Write: %q, %v", diffs, err)
	}
	gen := filepath.Join(dir, pages.GeneratedDir)
	if err := os.WriteFile(filepath.Join(gen, "stray.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(gen, pages.BaseURLLLMsFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gen, pages.ReferenceFile), []byte("# API reference\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	diffs, err := render.Diff(dir)
	want := []string{
		"generated/stray.md: not generated",
		"generated/api-reference.md: stale",
		"generated/with-base-url/llms.txt: missing",
	}
	if err != nil || !slices.Equal(diffs, want) {
		t.Errorf("Diff = %q, %v; want %q", diffs, err, want)
	}
	// Write replaces the directory: the stray file goes.
	if err := render.Write(dir); err != nil {
		t.Fatal(err)
	}
	if diffs, err := render.Diff(dir); err != nil || len(diffs) != 0 {
		t.Errorf("Diff after the second Write: %q, %v", diffs, err)
	}
}

// An invalid document or a guide the list does not name is refused.
func TestRenderRefusesBadInputs(t *testing.T) {
	dir := copyInputs(t)
	if err := os.WriteFile(filepath.Join(dir, "guides", "extra.md"), []byte("# Extra\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := render.Render(os.DirFS(dir)); err == nil {
		t.Error("Render accepted a guide not listed in pages.Guides")
	}
	dir = copyInputs(t)
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), []byte(`{"openapi":"3.1.0","info":{"title":"x"},"paths":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := render.Render(os.DirFS(dir)); err == nil {
		t.Error("Render accepted a document without info.version")
	}
}
