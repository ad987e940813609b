package dpop_test

import (
	"testing"

	"github.com/partnerapi/authplatform/pkg/dpop"
)

// BenchmarkVerify is the cost of one proof with an access token (the
// resource server's case), per algorithm: go test -bench Verify -benchmem.
func BenchmarkVerify(b *testing.B) {
	for _, alg := range []string{"ES256", "EdDSA", "RS256"} {
		b.Run(alg, func(b *testing.B) {
			c := goodClaims()
			c["ath"] = dpop.AccessTokenHash("svc_at_token")
			in := dpop.Input{Headers: []string{jwxProof(b, keyFor(b, alg), c)}, Method: testMethod, URI: testURI, AccessToken: "svc_at_token", Now: now}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dpop.Verify(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
