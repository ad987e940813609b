package docs

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestLinks: every relative link of README.md and of the pages under
// deploy/docs names a file or directory that exists, and a #anchor names a
// heading of the Markdown file it points into (GitHub's ids: slug).
func TestLinks(t *testing.T) {
	pages := map[string]page{}
	load := func(p string) (page, bool) {
		if pg, ok := pages[p]; ok {
			return pg, true
		}
		if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
			return page{}, false
		}
		pages[p] = readPage(t, p)
		return pages[p], true
	}
	checked := 0
	for _, p := range docPages(t) {
		pg, _ := load(p)
		for _, l := range pg.links() {
			u, err := url.Parse(l.target)
			if err != nil {
				t.Errorf("%s:%d: link %q does not parse: %v", p, l.line, l.target, err)
				continue
			}
			if u.Scheme != "" || u.Host != "" {
				continue // not relative: http(s), mailto
			}
			checked++
			target := p
			if u.Path != "" {
				target = path.Clean(path.Join(path.Dir(p), u.Path))
				if strings.HasPrefix(target, "../") {
					t.Errorf("%s:%d: link %q leaves the repository", p, l.line, l.target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot, target)); err != nil {
					t.Errorf("%s:%d: link %q: %s does not exist", p, l.line, l.target, target)
					continue
				}
			}
			if u.Fragment == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into %s, which is not Markdown", p, l.line, l.target, target)
				continue
			}
			tp, _ := load(target)
			if ids := tp.anchors(); !ids[u.Fragment] {
				t.Errorf("%s:%d: link %q: %s has no heading with id %q (its ids: %s)", p, l.line, l.target, target, u.Fragment, sortedKeys(ids))
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d relative links found in the pages: is the link pattern still right?", checked)
	}
}

// TestIndexLinksEveryPage: deploy/docs/README.md, the index, links every
// other page under deploy/docs.
func TestIndexLinksEveryPage(t *testing.T) {
	const index = "deploy/docs/README.md"
	linked := map[string]bool{}
	for _, l := range readPage(t, index).links() {
		if u, err := url.Parse(l.target); err == nil && u.Scheme == "" && u.Path != "" {
			linked[path.Clean(path.Join("deploy/docs", u.Path))] = true
		}
	}
	for _, p := range docPages(t) {
		if !strings.HasPrefix(p, "deploy/docs/") || p == index {
			continue
		}
		if !linked[p] {
			t.Errorf("%s does not link %s", index, p)
		}
	}
}

func sortedKeys(m map[string]bool) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
