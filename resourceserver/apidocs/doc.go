// Package apidocs holds the public documentation of the Partner Integration
// API: the OpenAPI 3.1 document of both services (token service and resource
// server), the Markdown guides, an API reference generated from the OpenAPI
// document, and the llms.txt index (https://llmstxt.org/) that links them.
//
// The OpenAPI document (openapi.json) and the guides (guides/*.md) are written
// by hand and embedded in the binary. [New] parses and validates the document
// once and renders the reference page and the llms.txt files from it, so the
// reference can never disagree with the schema. The reference's layout is a
// template (templates/reference.md.tmpl, embedded); reference.go only builds
// what it shows from the document, in the author's order of keys, including
// the error catalogue: every error answer the document's examples show, by
// status, with the operations that answer it. A [Docs] is immutable after
// [New] and safe for concurrent use.
//
// The documents say {base_url} (BaseURLPlaceholder) wherever the
// deployment's address belongs: New writes the configured public base URL
// in its place, or, without one, the resource server writes the address
// each request was sent to. Every example answer in the guides and the
// OpenAPI document is compared with the real servers' answer by
// deploy/e2e/sdk (TestDocsEqualTheWire); a new example needs a scenario
// there, and an unmarked example block fails that test.
//
// The package serves no HTTP itself: the resource server maps its routes to
// [Docs.OpenAPIJSON], [Docs.LLMsTxt], [Docs.LLMsFullTxt] and [Docs.Page].
// Tests of both servers check real answers against the document with
// [Docs.ValidateResponse].
package apidocs
