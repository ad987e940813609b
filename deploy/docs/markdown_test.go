package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// repoRoot is the repository's root, relative to this package's directory
// (go test runs a package's tests in its directory).
const repoRoot = "../.."

// page is one Markdown file: its path from the repository's root and its
// lines, fenced code blocks blanked (a link or a heading inside one is
// text, not Markdown).
type page struct {
	path  string
	lines []string
}

// readPage reads the Markdown file at path (from the repository's root).
func readPage(t *testing.T, path string) page {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	fence := ""
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return page{path: path, lines: lines}
}

// docPages is README.md and every Markdown file under deploy/ that is
// documentation for operators (deploy/docs/**, and deploy/README.md when
// it exists), as paths from the repository's root. Reports the harness
// writes (deploy/bench) are its output, not pages.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	if _, err := os.Stat(filepath.Join(repoRoot, "deploy/README.md")); err == nil {
		pages = append(pages, "deploy/README.md")
	}
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages = append(pages, filepath.ToSlash(filepath.Join("deploy/docs", p)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

var (
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\(([^()\s]*)(?:\s+"[^"]*")?\)`)
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// link is one inline link of a page.
type link struct {
	line   int // 1-based
	target string
}

// links returns the page's inline links ([text](target)), outside code.
func (p page) links() []link {
	var ls []link
	for i, l := range p.lines {
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			ls = append(ls, link{line: i + 1, target: m[2]})
		}
	}
	return ls
}

// anchors returns the ids GitHub gives the page's headings.
func (p page) anchors() map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, l := range p.lines {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		id := slug(m[2])
		if n := seen[id]; n > 0 {
			ids[fmt.Sprintf("%s-%d", id, n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

// slug is the id GitHub gives a heading of text: the rendered text (links
// as their text, code spans as their content) lowercased, every character
// but letters, digits, '-' and '_' dropped, each space a '-'. A repeated
// id gets -1, -2, ... (anchors).
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.Is(unicode.Mn, r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Signing-key withdrawal":                      "signing-key-withdrawal",
		"`authserver serve`":                          "authserver-serve",
		"Both servers (`--addr` to `--max-conns`)":    "both-servers---addr-to---max-conns",
		"Client secret format":                        "client-secret-format",
		"1. `POST /api/v1/oauth/token/` (authserver)": "1-post-apiv1oauthtoken-authserver",
		"Redis: one node, Sentinel or Cluster":        "redis-one-node-sentinel-or-cluster",
		"[Linked](x.md) heading":                      "linked-heading",
	} {
		if got := slug(text); got != want {
			t.Errorf("slug(%q) = %q, want %q", text, got, want)
		}
	}
	got := page{lines: []string{"# A", "## A", "### A"}}.anchors()
	for _, id := range []string{"a", "a-1", "a-2"} {
		if !got[id] {
			t.Errorf("anchors of three headings A: no %q in %v", id, got)
		}
	}
}
