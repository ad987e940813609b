package clients_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// testChangeRetried: a change run twice with one nonce (a retry after a
// broken connection) is made once: one generation step, one audit entry.
func testChangeRetried(t *testing.T, e *env) {
	c, _ := e.hospital(t)
	a, b, err := e.store.ChangeTwice(audit.WithActor(ctx(t), audit.Actor{System: "test"}), c.ID, strings.Repeat("d", 32))
	if err != nil {
		t.Fatal(err)
	}
	if a != 2 || b != 2 {
		t.Fatalf("generations %d, %d; want 2, 2 (the retry changes nothing)", a, b)
	}
	entries, err := e.store.ClientAudit(ctx(t), c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[1].Event != "client.rotate" || entries[1].Detail != "generation=2 secret_id=2" ||
		entries[1].Actor != (audit.Actor{System: "test"}) || entries[1].DetailWithActor() != "generation=2 secret_id=2 by test" {
		t.Fatalf("audit %+v; want created and one rotate by test", entries)
	}
}

// testOperators: operator clients live in the reserved operator
// organisation and hold admin scopes only; partners never hold them.
func testOperators(t *testing.T, e *env) {
	w, secret, err := e.store.CreateOperator(ctx(t), clients.OperatorSpec{Name: "portal"})
	if err != nil || secret == "" {
		t.Fatalf("create operator: %v", err)
	}
	if w.OrgSlug != clients.OperatorOrgSlug || w.Audience != clients.AudienceOperator || !slices.Equal(w.Scopes, []string{"admin.read", "admin.write"}) {
		t.Fatalf("operator %+v", w)
	}
	r, _, err := e.store.CreateOperator(ctx(t), clients.OperatorSpec{Name: "auditor", ReadOnly: true})
	if err != nil || !slices.Equal(r.Scopes, []string{"admin.read"}) {
		t.Fatalf("read-only operator %+v, %v", r, err)
	}
	got, err := e.store.GetClient(ctx(t), r.ID)
	if err != nil || !slices.Equal(got.Scopes, []string{"admin.read"}) {
		t.Fatalf("stored operator %+v, %v", got, err)
	}
	auth, err := e.store.Authenticate(ctx(t), clients.Attempt{ClientID: w.ID, Secret: secret, Address: "192.0.2.1", FailureLimit: 60, Token: true, Scope: []string{"admin.write"}})
	if err != nil || auth.Outcome != clients.Authenticated || !slices.Equal(auth.Scopes, []string{"admin.write"}) {
		t.Fatalf("operator token for admin.write: %+v, %v", auth, err)
	}
	refused := []struct {
		name string
		err  error
	}{
		{"partner org named operators", func() error {
			_, err := e.store.CreateOrg(ctx(t), clients.OrgSpec{Slug: clients.OperatorOrgSlug, Name: "x", Environment: "live"})
			return err
		}()},
		{"partner client in the operator org", func() error {
			_, _, err := e.store.CreateClient(ctx(t), clients.ClientSpec{OrgSlug: clients.OperatorOrgSlug, Name: "x", Audience: "hospital"})
			return err
		}()},
		{"operator audience elsewhere", func() error {
			e.org(t, "op-elsewhere", clients.EnvironmentLive)
			_, _, err := e.store.CreateClient(ctx(t), clients.ClientSpec{OrgSlug: "op-elsewhere", Name: "x", Audience: clients.AudienceOperator, Scopes: []string{"admin.read"}})
			return err
		}()},
		{"admin scope for a partner", func() error {
			_, _, err := e.store.CreateClient(ctx(t), clients.ClientSpec{OrgSlug: "op-elsewhere", Name: "x", Audience: "hospital", Scopes: []string{"admin.read"}})
			return err
		}()},
	}
	for _, r := range refused {
		if !errors.Is(r.err, clients.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", r.name, r.err)
		}
	}
}

// testListClientPage: pages in client id order, the cursor neither skips
// nor repeats, an unknown organisation is ErrNotFound.
func testListClientPage(t *testing.T, e *env) {
	e.org(t, "pg-a", clients.EnvironmentLive)
	e.org(t, "pg-b", clients.EnvironmentLive)
	var want []string
	for i := range 7 {
		org := "pg-a"
		if i%2 == 1 {
			org = "pg-b"
		}
		c, _ := e.client(t, clients.ClientSpec{OrgSlug: org, Name: "c", Audience: "pharma"})
		want = append(want, c.ID)
	}
	slices.Sort(want)
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		p, err := e.store.ListClientPage(ctx(t), "", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Clients {
			got = append(got, c.ID)
		}
		if !p.More {
			break
		}
		after = p.Clients[len(p.Clients)-1].ID
		if pages > 5 {
			t.Fatal("no end")
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	p, err := e.store.ListClientPage(ctx(t), "pg-a", "", 100)
	if err != nil || len(p.Clients) != 4 || p.More {
		t.Fatalf("org page %d clients, more %v, %v; want 4", len(p.Clients), p.More, err)
	}
	if _, err := e.store.ListClientPage(ctx(t), "pg-none", "", 10); !errors.Is(err, clients.ErrNotFound) {
		t.Fatalf("unknown org: %v", err)
	}
}
