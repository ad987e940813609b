package dpoptest_test

import (
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/dpop/dpoptest"
)

// TestProofVerifies: a proof of this package verifies with pkg/dpop and
// binds to the key's JKT.
func TestProofVerifies(t *testing.T) {
	k := dpoptest.NewKey()
	now := time.Unix(1_800_000_000, 0)
	proof := k.Sign(dpoptest.Proof{Method: "GET", URI: "https://api.example.com/api/v1/me/", AccessToken: "svc_at_x", IssuedAt: now})
	p, err := dpop.Verify(dpop.Input{Headers: []string{proof}, Method: "GET", URI: "https://api.example.com/api/v1/me/", AccessToken: "svc_at_x", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if err := dpop.CheckBinding(p, k.JKT()); err != nil {
		t.Fatalf("CheckBinding: %v (JKT %s, proof's %s)", err, k.JKT(), p.JKT)
	}
}
