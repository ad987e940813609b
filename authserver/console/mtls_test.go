package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestMTLSClientForm: the console creates a tls_client_auth client from
// the form's certificate name, shows its method and name on the client
// page, and shows the admin API's problems of a form without a name.
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
	if p := b.get("/console/clients/" + list[0].ID); !strings.Contains(p.body, "tls_client_auth (DNS SAN <code>ward.example</code>)") {
		t.Fatalf("client page:\n%s", p.body)
	}
	form.Set("tls_subject", "")
	form.Set("idem", "client-key-9876543210")
	if p := b.post("/console/orgs/tls", "/console/orgs/tls", form); p.status != http.StatusBadRequest || !strings.Contains(p.body, "tls_client_auth_san_dns") {
		t.Fatalf("no name: %d\n%s", p.status, p.body)
	}
}
