package main

import (
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// TestCLIDPoPBound: clients create --dpop-bound registers a client for
// DPoP-bound tokens only (RFC 9449 section 5.2), shown by --json and
// clients show; clients set-dpop-bound changes it both ways, audited; a
// token request of a bound client without a proof is refused on the
// token service's own path.
func TestCLIDPoPBound(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.must("orgs", "create", "--slug", "dpop", "--name", "DPoP", "--environment", "live")
	c := h.createClient("--org", "dpop", "--name", "bound", "--audience", "pharma", "--scopes", "events.subscribe", "--dpop-bound")
	if !c.DPoPBound {
		t.Fatalf("clients create --dpop-bound --json: %+v", c)
	}
	plain := h.createClient("--org", "dpop", "--name", "plain", "--audience", "pharma", "--scopes", "")
	if plain.DPoPBound {
		t.Fatalf("clients create without --dpop-bound: %+v", plain)
	}
	if out := h.must("clients", "show", plain.ID, "--json"); strings.Contains(out, "dpop_bound") {
		t.Errorf("clients show --json of an unbound client names dpop:\n%s", out)
	}
	if out := h.must("clients", "show", c.ID, "--json"); !strings.Contains(out, `"dpop_bound_access_tokens": true`) {
		t.Errorf("clients show --json:\n%s", out)
	}
	if out := h.must("clients", "show", c.ID); !strings.Contains(out, "DPoP-bound only (dpop_bound_access_tokens)") {
		t.Errorf("clients show:\n%s", out)
	}
	a, err := h.store().Authenticate(t.Context(), clients.Attempt{ClientID: c.ID, Secret: c.ClientSecret, Address: "192.0.2.1", FailureLimit: 60, Token: true})
	if err != nil || a.Outcome != clients.ProofRequired {
		t.Fatalf("bound client's token request without a proof: %+v, %v; want ProofRequired", a, err)
	}

	if out := h.must("clients", "set-dpop-bound", c.ID, "false"); out != "client "+c.ID+": bearer or DPoP-bound tokens, from its next token request\n" {
		t.Errorf("set-dpop-bound false: %q", out)
	}
	if out := h.must("clients", "set-dpop-bound", plain.ID, "true"); out != "client "+plain.ID+": DPoP-bound tokens only, from its next token request\n" {
		t.Errorf("set-dpop-bound true: %q", out)
	}
	if out := h.must("clients", "show", plain.ID, "--json"); !strings.Contains(out, `"dpop_bound_access_tokens": true`) {
		t.Errorf("clients show --json after set-dpop-bound true:\n%s", out)
	}
	if out := h.must("clients", "audit", c.ID); !strings.Contains(out, "client.dpop_bound") || !strings.Contains(out, "dpop_bound=false") {
		t.Errorf("clients audit:\n%s", out)
	}
	if _, err := h.run("clients", "set-dpop-bound", c.ID, "yes"); err == nil || !isUsage(err) {
		t.Errorf("set-dpop-bound yes: %v, want a usage error", err)
	}
}
