package adminapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestRoutesDocumented: every route is an operation of the OpenAPI
// document, and every operation of the document is a route.
func TestRoutesDocumented(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	var documented, served []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	for _, rt := range (&Server{}).routes() {
		served = append(served, rt.method+" "+rt.pattern)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Fatalf("routes and document differ:\nserved     %v\ndocumented %v", served, documented)
	}
}
