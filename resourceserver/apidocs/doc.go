// Package apidocs holds the public documentation of the Partner Integration
// API: the OpenAPI 3.1 document of both services (token service and resource
// server), the Markdown guides, an API reference generated from the OpenAPI
// document, and the llms.txt index (https://llmstxt.org/) that links them.
//
// The OpenAPI document (openapi.json) and the guides (guides/*.md) are written
// by hand. The API reference and the llms.txt files are rendered from them at
// build time by go generate (internal/render: kin-openapi validates the
// document, a template lays the reference out) into generated/, so the
// reference can never disagree with the schema; TestGeneratedFilesAreCurrent
// fails when generated/ is not what "go generate ./resourceserver/apidocs"
// makes. Everything is embedded in the binary, and [New] only chooses and
// fills in bytes: neither kin-openapi nor text/template is linked into the
// resource server (its TestBinaryLinksNoRendering). The pages and their
// order are declared once, in internal/pages. A [Docs] is immutable after
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
// package apidocstest.
package apidocs
