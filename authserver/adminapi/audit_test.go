package adminapi_test

import (
	"encoding/json"
	"testing"
)

// TestAuditByOperator: GET /admin/v1/audit?operator=ID lists that
// operator's calls only, newest first, paged by its cursor.
func TestAuditByOperator(t *testing.T) {
	s := newStack(t, options{})
	a, _, hca := s.operator(false)
	b, _, hcb := s.operator(true)
	for range 3 {
		s.call(hca, "GET", "/admin/v1/orgs", nil)
		s.call(hcb, "GET", "/admin/v1/keys", nil)
	}
	type page struct {
		Items []struct {
			Operator, Route string
			Status          int
		} `json:"items"`
		Next string `json:"next_cursor"`
	}
	read := func(path string) page {
		t.Helper()
		ans := s.call(hcb, "GET", path, nil)
		var p page
		if ans.Status != 200 || json.Unmarshal(ans.Body, &p) != nil {
			t.Fatalf("GET %s: %d %s", path, ans.Status, ans.Body)
		}
		return p
	}
	p := read("/admin/v1/audit?operator=" + a.ID + "&limit=2")
	if len(p.Items) != 2 || p.Next == "" {
		t.Fatalf("first page of %s: %+v", a.ID, p)
	}
	rest := read("/admin/v1/audit?operator=" + a.ID + "&limit=2&cursor=" + p.Next)
	all := append(p.Items, rest.Items...)
	if len(all) != 3 {
		t.Fatalf("calls of %s: %+v", a.ID, all)
	}
	for _, e := range all {
		if e.Operator != a.ID || e.Route != "GET /admin/v1/orgs" || e.Status != 200 {
			t.Errorf("entry %+v, want %s's GET /admin/v1/orgs", e, a.ID)
		}
	}
	// b's own listings are recorded too (after they are answered).
	if p := read("/admin/v1/audit?operator=" + b.ID); len(p.Items) != 3+2 {
		t.Errorf("calls of %s: %d, want 5: %+v", b.ID, len(p.Items), p.Items)
	}
	if p := read("/admin/v1/audit?operator=svc_nobody"); len(p.Items) != 0 || p.Next != "" {
		t.Errorf("calls of nobody: %+v", p)
	}
}
