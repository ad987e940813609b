package clients_test

import (
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
)

// testDPoP: a token request's DPoP proof (RFC 9449 section 5) is decided in
// the one authentication round trip, after the credential: a verified
// proof's mark is set once and a second use is ProofReplayed; a proof the
// caller refused is ProofInvalid; a client registered with
// dpop_bound_access_tokens gets ProofRequired without a proof; none of
// them counts against the token limit; a wrong secret with a proof is
// BadCredentials and marks nothing. SetDPoPBound changes the flag both
// ways, and GetClient shows it.
func testDPoP(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	if c.DPoPBound {
		t.Fatalf("CreateClient without DPoPBound: %+v", c)
	}
	bound, boundSecret := e.client(t, clients.ClientSpec{OrgSlug: "st-elsewhere", Name: "bound", Audience: clients.AudiencePharma,
		Scopes: []string{clients.ScopeEventsSubscribe}, DPoPBound: true})
	if !bound.DPoPBound {
		t.Fatalf("CreateClient with DPoPBound: %+v", bound)
	}
	if got, err := e.store.GetClient(ctx(t), bound.ID); err != nil || !got.DPoPBound {
		t.Fatalf("GetClient(bound) = %+v, %v; want DPoPBound", got, err)
	}
	proof := func(jti string) *clients.ProofCheck {
		return &clients.ProofCheck{Verified: true, Proof: dpop.Proof{JKT: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", JTI: jti},
			TTL: dpop.ReplayTTL(0, 0)}
	}
	tok := func(id, secret string, p *clients.ProofCheck) clients.Authentication {
		t.Helper()
		return e.attempt(t, clients.Attempt{ClientID: id, Secret: secret, Address: testAddr, FailureLimit: 60, Token: true, DPoP: p})
	}

	// A wrong secret with a proof: invalid_client, nothing marked.
	if a := tok(c.ID, boundSecret, proof("j1")); a.Outcome != clients.BadCredentials {
		t.Fatalf("wrong secret with a proof: %+v, want BadCredentials", a)
	}
	if k := e.keysWith(t, ":dpop:"); len(k) != 0 {
		t.Fatalf("a wrong secret's proof left marks %v", k)
	}
	// A verified proof: Authenticated, counted, marked for ReplayTTL.
	if a := tok(c.ID, secret, proof("j1")); a.Outcome != clients.Authenticated || a.Decision.Count != 1 {
		t.Fatalf("first use: %+v, want Authenticated, count 1", a)
	}
	marks := e.keysWith(t, ":dpop:")
	if len(marks) != 1 || marks[0] != e.prefix+"{"+c.ID+"}:dpop:"+dpop.ReplayKey(proof("j1").Proof) {
		t.Fatalf("marks %v, want the one of j1 under the client's hash tag", marks)
	}
	if ttl := e.rdb.PTTL(ctx(t), marks[0]).Val(); ttl <= dpop.ReplayTTL(0, 0)-time.Second || ttl > dpop.ReplayTTL(0, 0) {
		t.Errorf("mark's PTTL %v, want about %v", ttl, dpop.ReplayTTL(0, 0))
	}
	// Replayed, refused by the caller, required: refused, not counted.
	for _, tc := range []struct {
		name string
		id   string
		sec  string
		p    *clients.ProofCheck
		want clients.AuthOutcome
	}{
		{"replayed", c.ID, secret, proof("j1"), clients.ProofReplayed},
		{"refused by the caller", c.ID, secret, &clients.ProofCheck{}, clients.ProofInvalid},
		{"bound client without a proof", bound.ID, boundSecret, nil, clients.ProofRequired},
		{"bound client with a refused proof", bound.ID, boundSecret, &clients.ProofCheck{}, clients.ProofInvalid},
	} {
		if a := tok(tc.id, tc.sec, tc.p); a.Outcome != tc.want || !a.Checked || a.Generation != 1 {
			t.Errorf("%s: %+v, want outcome %d, checked, generation 1", tc.name, a, tc.want)
		}
	}
	if a := tok(c.ID, secret, nil); a.Outcome != clients.Authenticated || a.Decision.Count != 2 {
		t.Fatalf("without a proof after the refusals: %+v, want Authenticated, count 2 (refusals not counted)", a)
	}
	if a := tok(bound.ID, boundSecret, proof("j1")); a.Outcome != clients.Authenticated || a.Decision.Count != 1 {
		t.Fatalf("bound client with a proof (same jti, another client): %+v, want Authenticated, count 1", a)
	}
	// Not a token request (introspection's caller): the proof plays no part.
	if a := e.attempt(t, clients.Attempt{ClientID: bound.ID, Secret: boundSecret, Address: testAddr, FailureLimit: 60}); a.Outcome != clients.Authenticated {
		t.Fatalf("bound client as a caller: %+v, want Authenticated", a)
	}

	// SetDPoPBound both ways, audited.
	got, err := e.store.SetDPoPBound(ctx(t), bound.ID, false)
	if err != nil || got.DPoPBound {
		t.Fatalf("SetDPoPBound(false) = %+v, %v", got, err)
	}
	if a := tok(bound.ID, boundSecret, nil); a.Outcome != clients.Authenticated {
		t.Fatalf("unbound client without a proof: %+v, want Authenticated", a)
	}
	if got, err = e.store.SetDPoPBound(ctx(t), c.ID, true); err != nil || !got.DPoPBound || got.Generation != 1 {
		t.Fatalf("SetDPoPBound(true) = %+v, %v; want bound, generation unchanged", got, err)
	}
	if a := tok(c.ID, secret, nil); a.Outcome != clients.ProofRequired {
		t.Fatalf("newly bound client without a proof: %+v, want ProofRequired", a)
	}
	if _, err := e.store.SetDPoPBound(ctx(t), clients.NewClientID(), true); err == nil {
		t.Error("SetDPoPBound of an unknown client succeeded")
	}
}
