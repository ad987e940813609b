package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestMTLSClientForm: the console creates a tls_client_auth client from
// the form's certificate name, shows its method and name on the client
// page, changes the name there (no keys form for it), and shows the admin API's problems of a form without a name.
func TestMTLSClientForm(t *testing.T) {
	s := newStack(t)
	id, secret := s.operator(false)
	b := s.browser()
	b.signIn(id, secret)
	b.post("/console/orgs", "/console/orgs", url.Values{"action": {"create"}, "slug": {"tls"}, "name": {"TLS"}, "environment": {"live"}, "idem": {"org-key-0123456789"}})
	form := url.Values{"action": {"create-client"}, "name": {"Ward"}, "audience": {"hospital"}, "scope": {"patients.read"},
		"auth_method": {"tls_client_auth"}, "tls_subject_kind": {"tls_client_auth_san_dns"}, "tls_subject": {"ward.example"}, "idem": {"client-key-0123456789"}}
	p := b.post("/console/orgs/tls", "/console/orgs/tls", form)
	if p.status != http.StatusOK {
		t.Fatalf("create: %d\n%s", p.status, p.body)
	}
	list, err := s.store.ListClients(t.Context(), "tls")
	if err != nil || len(list) != 1 || list[0].AuthMethod != "tls_client_auth" {
		t.Fatalf("clients: %+v %v", list, err)
	}
	page := "/console/clients/" + list[0].ID
	if p := b.get(page); !strings.Contains(p.body, "tls_client_auth (DNS SAN <code>ward.example</code>)") ||
		!strings.Contains(p.body, `name="action" value="tls-subject"`) || strings.Contains(p.body, `name="action" value="keys"`) {
		t.Fatalf("client page:\n%s", p.body)
	}
	// The certificate name changes in place, from the client page.
	p = b.post(page, page, url.Values{"action": {"tls-subject"}, "tls_subject_kind": {"tls_client_auth_subject_dn"},
		"tls_subject": {"CN=ward2.example,O=St Elsewhere"}, "idem": {"subject-key-0123456789"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "Changed the client&#39;s certificate name") ||
		!strings.Contains(p.body, "tls_client_auth (subject DN <code>CN=ward2.example,O=St Elsewhere</code>)") {
		t.Fatalf("change the name: %d\n%s", p.status, p.body)
	}
	if c, err := s.store.GetClient(t.Context(), list[0].ID); err != nil || c.TLSSubject == nil || c.TLSSubject.Value != "CN=ward2.example,O=St Elsewhere" || c.KeysVersion != 2 {
		t.Fatalf("after the change: %+v %v", c, err)
	}
	form.Set("tls_subject", "")
	form.Set("idem", "client-key-9876543210")
	if p := b.post("/console/orgs/tls", "/console/orgs/tls", form); p.status != http.StatusBadRequest || !strings.Contains(p.body, "tls_client_auth_san_dns") {
		t.Fatalf("no name: %d\n%s", p.status, p.body)
	}
}
