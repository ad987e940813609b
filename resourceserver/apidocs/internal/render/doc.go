// Package render makes the generated files of package apidocs from its
// hand-written ones, at build time (go generate, command gen): it loads and
// validates openapi.json with kin-openapi and renders the API reference
// (templates/reference.md.tmpl, text/template) and the llms.txt files
// (https://llmstxt.org/) from it and the guides. The reference is built
// from the document in the author's order of keys, including the error
// catalogue: every error answer the document's examples show, by status,
// with the operations that answer it.
//
// Only the generator and tests import this package, so that neither
// kin-openapi nor the template engine is linked into the resource server:
// text/template's method calls by name make the linker keep every
// exported method of every linked type (resourceserver's
// TestBinaryLinksNoRendering). apidocs's TestGeneratedFilesAreCurrent
// fails when the committed files differ from what Render makes.
package render
