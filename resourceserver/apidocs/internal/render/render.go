package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/partnerapi/authplatform/resourceserver/apidocs/internal/pages"
)

// site is what the generated files are rendered from: the loaded OpenAPI
// document and every page, the reference last.
type site struct {
	doc   *openapi3.T
	pages []pages.Page
}

// Render loads and validates openapi.json of src (the apidocs directory)
// and renders the API reference and the llms.txt files from it and the
// guides (guides/<name>.md of pages.Guides). It returns every generated
// file by its path under pages.GeneratedDir.
func Render(src fs.FS) (map[string][]byte, error) {
	ctx := context.Background()
	raw, err := fs.ReadFile(src, "openapi.json")
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("load openapi.json: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("validate openapi.json: %w", err)
	}
	idx, err := indexJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("index openapi.json: %w", err)
	}

	guides, err := pages.ReadGuides(src)
	if err != nil {
		return nil, err
	}
	s := &site{doc: doc, pages: guides}
	ref := renderReference(doc, idx, pages.ReferenceTitle)
	s.pages = append(s.pages, pages.Page{Name: pages.ReferenceName, Title: pages.ReferenceTitle, Description: pages.ReferenceDescription, Body: ref})
	return map[string][]byte{
		pages.ReferenceFile:       ref,
		pages.LLMsFile:            s.renderLLMsTxt(""),
		pages.LLMsFullFile:        s.renderLLMsFullTxt(""),
		pages.BaseURLLLMsFile:     s.renderLLMsTxt(pages.BaseURLPlaceholder),
		pages.BaseURLLLMsFullFile: s.renderLLMsFullTxt(pages.BaseURLPlaceholder),
	}, nil
}

// Write renders the apidocs directory dir and replaces
// dir/pages.GeneratedDir with the
// result: what go generate runs.
func Write(dir string) error {
	files, err := Render(os.DirFS(dir))
	if err != nil {
		return err
	}
	out := filepath.Join(dir, pages.GeneratedDir)
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		p := filepath.Join(out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Diff compares the generated files under dir/pages.GeneratedDir with what
// Render makes
// of dir, and names every file that is missing, stale or not generated.
func Diff(dir string) ([]string, error) {
	want, err := Render(os.DirFS(dir))
	if err != nil {
		return nil, err
	}
	var diffs []string
	gen := os.DirFS(filepath.Join(dir, pages.GeneratedDir))
	err = fs.WalkDir(gen, ".", func(name string, e fs.DirEntry, err error) error {
		if name == "." && errors.Is(err, fs.ErrNotExist) {
			return fs.SkipAll // nothing generated yet: every file is missing
		}
		if err != nil || e.IsDir() {
			return err
		}
		if _, ok := want[name]; !ok {
			diffs = append(diffs, path.Join(pages.GeneratedDir, name)+": not generated")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, err := fs.ReadFile(gen, name)
		switch {
		case err != nil:
			diffs = append(diffs, path.Join(pages.GeneratedDir, name)+": missing")
		case !bytes.Equal(got, want[name]):
			diffs = append(diffs, path.Join(pages.GeneratedDir, name)+": stale")
		}
	}
	return diffs, nil
}
