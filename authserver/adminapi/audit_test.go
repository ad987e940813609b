package adminapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
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

// TestClientAuditPages: a client's trail in pages with limit and the
// cursors the API gives, of one operator with operator; without limit or
// cursor, the whole trail and no cursor, as before pages; a cursor the API
// never gave is 400.
func TestClientAuditPages(t *testing.T) {
	s := newStack(t, options{})
	one, _, hc1 := s.operator(false)
	two, _, hc2 := s.operator(false)
	id, _ := s.newClient(hc1, "trail-pages")
	for i, hc := range []*http.Client{hc2, hc1, hc2} {
		if a := s.call(hc, "PUT", "/admin/v1/clients/"+id+"/rate-limit", map[string]any{"rate_limit_per_minute": 100 + i}); a.Status != 200 {
			t.Fatalf("set a limit: %d %s", a.Status, a.Body)
		}
	}
	type entry struct {
		ID     string `json:"id"`
		Detail string `json:"detail"`
	}
	read := func(hc *http.Client, query string) (ids []string, details []string, next string) {
		t.Helper()
		a := s.call(hc, "GET", "/admin/v1/clients/"+id+"/audit"+query, nil)
		var p struct {
			Items      []entry `json:"items"`
			NextCursor string  `json:"next_cursor"`
		}
		if a.Status != 200 || json.Unmarshal(a.Body, &p) != nil {
			t.Fatalf("audit%s: %d %s", query, a.Status, a.Body)
		}
		for _, e := range p.Items {
			ids, details = append(ids, e.ID), append(details, e.Detail)
		}
		return ids, details, p.NextCursor
	}
	all, _, next := read(hc1, "")
	if strings.Join(all, ",") != "1,2,3,4" || next != "" {
		t.Fatalf("the whole trail: %v, cursor %q", all, next)
	}
	var paged []string
	cursor := ""
	for range 5 {
		q := "?limit=3"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		ids, _, next := read(hc2, q)
		paged = append(paged, strings.Join(ids, ","))
		if cursor = next; cursor == "" {
			break
		}
	}
	if got := strings.Join(paged, " | "); got != "1,2,3 | 4" {
		t.Fatalf("pages of 3: %s", got)
	}
	ids, details, _ := read(hc1, "?operator="+two.ID)
	if strings.Join(ids, ",") != "2,4" || !strings.Contains(details[0], "operator="+two.ID) {
		t.Fatalf("the entries of %s: %v %v", two.ID, ids, details)
	}
	if ids, _, next := read(hc1, "?operator="+one.ID+"&limit=1"); strings.Join(ids, ",") != "1" || next == "" {
		t.Fatalf("the first entry of %s: %v, cursor %q", one.ID, ids, next)
	}
	for _, bad := range []string{"?cursor=bm9wZQ", "?cursor=!", "?limit=0"} {
		if a := s.call(hc1, "GET", "/admin/v1/clients/"+id+"/audit"+bad, nil); a.Status != 400 {
			t.Errorf("audit%s: %d %s, want 400", bad, a.Status, a.Body)
		}
	}
}
