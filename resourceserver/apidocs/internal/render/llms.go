package render

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/partnerapi/authplatform/resourceserver/apidocs/internal/pages"
)

// renderLLMsTxt renders the llms.txt index (https://llmstxt.org/): an H1 with
// the API's title, a blockquote summary, notes, a "Docs" section linking
// every page and an "Optional" section with the machine-readable sources.
func (s *site) renderLLMsTxt(base string) []byte {
	var b bytes.Buffer
	s.writeHeader(&b, base)
	b.WriteString("## Docs\n\n")
	for _, p := range s.pages {
		fmt.Fprintf(&b, "- [%s](%s/docs/%s.md): %s\n", p.Title, base, p.Name, p.Description)
	}
	b.WriteString("\n## Optional\n\n")
	fmt.Fprintf(&b, "- [OpenAPI document](%s/api/v1/schema/?format=json): The OpenAPI %s description of both services, as JSON.\n", base, s.doc.OpenAPI)
	fmt.Fprintf(&b, "- [Full documentation](%s/llms-full.txt): Every guide and the API reference in one Markdown file.\n", base)
	return b.Bytes()
}

// renderLLMsFullTxt renders every page into one Markdown file, each page's
// headings moved one level down under the document's H1.
func (s *site) renderLLMsFullTxt(base string) []byte {
	var b bytes.Buffer
	s.writeHeader(&b, base)
	for _, p := range s.pages {
		fmt.Fprintf(&b, "<!-- %s/docs/%s.md -->\n\n", base, p.Name)
		b.Write(demoteHeadings(p.Body))
		if !bytes.HasSuffix(p.Body, []byte("\n")) {
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// writeHeader writes the H1, the summary blockquote and the notes shared by
// llms.txt and llms-full.txt.
func (s *site) writeHeader(b *bytes.Buffer, base string) {
	info := s.doc.Info
	fmt.Fprintf(b, "# %s\n\n", info.Title)
	fmt.Fprintf(b, "> %s\n\n", info.Summary)
	where := "the base address `" + pages.BaseURLPlaceholder + "` of the deployment"
	if base != "" {
		where = "`" + base + "`"
	}
	fmt.Fprintf(b, "API version %s. All paths are relative to %s. ", info.Version, where)
	b.WriteString("Get a token with `POST /api/v1/oauth/token/` (grant_type=client_credentials, client credentials in HTTP Basic), ")
	b.WriteString("then send `Authorization: Bearer <ACCESS_TOKEN>` to `/api/v1/` endpoints. ")
	b.WriteString("Tokens live 3600 seconds; there are no refresh tokens.\n\n")
}

// demoteHeadings adds one '#' to every ATX heading of md outside fenced code
// blocks.
func demoteHeadings(md []byte) []byte {
	var b bytes.Buffer
	fence := ""
	for line := range strings.Lines(string(md)) {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
		case strings.HasPrefix(trimmed, "```"):
			fence = "```"
		case strings.HasPrefix(trimmed, "~~~"):
			fence = "~~~"
		case strings.HasPrefix(line, "#"):
			b.WriteByte('#')
		}
		b.WriteString(line)
	}
	return b.Bytes()
}
