// Package adminapitest checks real answers of the admin API against its
// OpenAPI 3.1 document with kin-openapi (JSON Schema 2020-12), for the
// tests of package adminapi and the end-to-end suites. It is linked into
// no binary.
package adminapitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/partnerapi/authplatform/authserver/adminapi"
)

// Validator checks answers against the document.
type Validator struct {
	doc    *openapi3.T
	router routers.Router
}

// Load reads and validates the document (kin-openapi's own validation of
// an OpenAPI 3.1 document: structure, references, schemas, examples). The
// document is read once per process and the Validator shared: it is
// immutable and safe for concurrent use, and a test process starts an
// admin API per test (reading it takes about 90 ms under the race
// detector).
func Load() (*Validator, error) { return load() }

var load = sync.OnceValues(func() (*Validator, error) {
	ctx := context.Background()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(adminapi.OpenAPI())
	if err != nil {
		return nil, fmt.Errorf("admin openapi: %w", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		return nil, fmt.Errorf("admin openapi: version %s, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("admin openapi: %w", err)
	}
	// The document's server is "/": match paths whatever the host.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("admin openapi router: %w", err)
	}
	return &Validator{doc: doc, router: router}, nil
})

// Validate checks one answer: the path and method are documented, the
// status is documented for them, and headers and body match.
func (v *Validator) Validate(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := v.router.FindRoute(req)
	if errors.Is(err, routers.ErrPathNotFound) || errors.Is(err, routers.ErrMethodNotAllowed) {
		// No operation to check against: an unknown path (404) or method
		// (405) must still be a problem.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s %s: %d for an undocumented operation", req.Method, req.URL.Path, status)
		}
		return v.validateProblem(header, body)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 status, Header: header, Options: opts,
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, in); err != nil {
		return fmt.Errorf("%s %s: %d: %w", req.Method, req.URL.Path, status, err)
	}
	return nil
}

// validateProblem checks an answer against the document's Problem schema.
func (v *Validator) validateProblem(header http.Header, body []byte) error {
	if ct := header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Errorf("problem with Content-Type %q", ct)
	}
	var value any
	if err := json.Unmarshal(body, &value); err != nil {
		return fmt.Errorf("problem body: %w", err)
	}
	return v.doc.Components.Schemas["Problem"].Value.VisitJSON(value, openapi3.EnableJSONSchema2020())
}
