package dpop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/dpop"
)

// FuzzVerify feeds Verify arbitrary proofs, methods and URIs: it must never
// panic, and what it accepts must be a proof it can account for.
func FuzzVerify(f *testing.F) {
	f.Add(rfcTokenProof, "POST", "https://server.example.com/token", "", int64(1562262616))
	f.Add(rfcResourceProof, "GET", "https://resource.example.org/protectedresource", rfcAccessToken, int64(1562262618))
	f.Add(jwxProof(f, keyFor(f, "EdDSA"), goodClaims()), testMethod, testURI, "", now.Unix())
	f.Add("e30.e30.AAAA", "GET", "https://x/", "", int64(0))
	f.Add(b64(`{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"","y":""}}`)+"."+b64(`{}`)+".AA", "GET", "https://x/%41", "t", int64(1))
	f.Fuzz(func(t *testing.T, proof, method, uri, token string, unix int64) {
		p, err := dpop.Verify(dpop.Input{Headers: []string{proof}, Method: method, URI: uri, AccessToken: token, Now: time.Unix(unix, 0)})
		if err != nil {
			if _, ok := err.(*dpop.Error); !ok {
				t.Fatalf("error %T %v, want *dpop.Error", err, err)
			}
			return
		}
		if len(p.JKT) != 43 || p.JTI == "" || len(p.JTI) > dpop.MaxJTILength || strings.Count(proof, ".") != 2 {
			t.Fatalf("accepted %+v from %q", p, proof)
		}
	})
}
