// Package apidocstest checks real answers of either server (token service
// and resource server) against the OpenAPI document of package apidocs
// with kin-openapi, for the servers' tests and the end-to-end suites. It
// is linked into no binary (resourceserver's TestBinaryLinksNoRendering).
package apidocstest

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"sync"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

// Validator checks answers against the document. It is immutable and safe
// for concurrent use.
type Validator struct {
	router routers.Router
}

// Load reads and validates the document served without a base URL. It is
// read once per process and the Validator shared: a test process starts a
// server per test (reading the document takes about 50 ms, 180 ms under the
// race detector).
func Load() (*Validator, error) { return load() }

var load = sync.OnceValues(func() (*Validator, error) {
	docs, err := apidocs.New("")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	loader := openapi3.NewLoader()
	loader.Context = ctx
	doc, err := loader.LoadFromData(docs.OpenAPIJSON())
	if err != nil {
		return nil, fmt.Errorf("apidocstest: load openapi.json: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("apidocstest: validate openapi.json: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("apidocstest: route openapi.json: %w", err)
	}
	return &Validator{router: router}, nil
})

// Validate checks one real answer of either server against the OpenAPI
// document. req is the request that was answered (only its method and URL
// are used); status, header and body are the answer.
//
// It reports an error when the path or method is not in the document, when
// the status is not documented for the operation, when a header the document
// marks as required is missing or does not match its schema, when the
// Content-Type is not one the document lists for that status, or when the
// body does not match the schema. Bodies of media types openapi3filter cannot
// decode, such as text/markdown, are only checked to be UTF-8.
func (v *Validator) Validate(ctx context.Context, req *http.Request, status int, header http.Header, body []byte) error {
	route, pathParams, err := v.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("apidocs: %s %s: %w", req.Method, req.URL.Path, err)
	}

	opts := &openapi3filter.Options{
		IncludeResponseStatus: true,
		MultiError:            true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	}

	// openapi3filter rejects a body whose media type has no registered
	// decoder. Registering one would change package-global state of
	// openapi3filter, so such bodies are checked here instead.
	if resp := route.Operation.Responses.Status(status); resp != nil && resp.Value != nil {
		ct := header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err == nil && resp.Value.Content.Get(ct) != nil &&
			openapi3filter.RegisteredBodyDecoder(mt) == nil {
			if !utf8.Valid(body) {
				return fmt.Errorf("apidocs: %s %s: %d %s body is not UTF-8", req.Method, req.URL.Path, status, mt)
			}
			opts.ExcludeResponseBody = true
		}
	}

	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: pathParams,
			Route:      route,
			Options:    opts,
		},
		Status:  status,
		Header:  header,
		Options: opts,
	}
	input.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(ctx, input); err != nil {
		return fmt.Errorf("apidocs: %s %s: %d: %w", req.Method, req.URL.Path, status, err)
	}
	return nil
}
