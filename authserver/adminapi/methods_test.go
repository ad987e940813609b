package adminapi_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestMethodNotAllowedDocumented: every operation documents the 405 that a
// wrong method on its path answers, and that answer is a problem whose
// Allow names the methods the path takes (HEAD with GET).
func TestMethodNotAllowedDocumented(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	s := newStack(t, options{})
	if err := json.Unmarshal(s.call(nil, "GET", "/admin/v1/openapi.json", nil).Body, &doc); err != nil {
		t.Fatal(err)
	}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if _, ok := op.Responses["405"]; method != "parameters" && !ok {
				t.Errorf("%s %s: no 405", strings.ToUpper(method), path)
			}
		}
	}
	for path, ops := range doc.Paths {
		var allow []string
		for method := range ops {
			allow = append(allow, strings.ToUpper(method))
			if method == "get" {
				allow = append(allow, "HEAD")
			}
		}
		slices.Sort(allow)
		concrete := strings.NewReplacer("{slug}", "acme", "{client_id}", "svc_aaaaaaaaaaaaaaaaaaaaaaaa", "{secret_id}", "s1", "{kid}", "k1").Replace(path)
		a := s.call(nil, "PATCH", concrete, nil)
		if a.Status != 405 || a.Header.Get("Content-Type") != "application/problem+json" || a.Header.Get("Allow") != strings.Join(allow, ", ") {
			t.Errorf("PATCH %s: %d %s Allow %q, want 405 Allow %q", concrete, a.Status, a.Body, a.Header.Get("Allow"), strings.Join(allow, ", "))
		}
	}
}
