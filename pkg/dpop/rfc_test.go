package dpop_test

import (
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/dpop"
)

// The examples of RFC 9449, with the RFC 8792 line folding undone. Both are
// signed by one EC P-256 key, whose thumbprint section 6.1 gives as the
// cnf.jkt of a token bound to it.
const (
	// rfcTokenProof is figure 2 (section 4.1): a proof for a token request,
	// POST https://server.example.com/token, iat 1562262616.
	rfcTokenProof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19" +
		".eyJqdGkiOiItQndDM0VTYzZhY2MybFRjIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vc2VydmVyLmV4YW1wbGUuY29tL3Rva2VuIiwiaWF0IjoxNTYyMjYyNjE2fQ" +
		".2-GxA6T8lP4vfrg8v-FdWP0A0zdrj8igiMLvqRMUvwnQg4PtFLbdLXiOSsX0x7NVY-FNyJK70nfbV37xRZT3Lg"
	// rfcResourceProof is figure 13 (section 7.1): a proof sent with the
	// access token rfcAccessToken, GET
	// https://resource.example.org/protectedresource, iat 1562262618, ath.
	rfcResourceProof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7Imt0eSI6IkVDIiwieCI6Imw4dEZyaHgtMzR0VjNoUklDUkRZOXpDa0RscEJoRjQyVVFVZldWQVdCRnMiLCJ5IjoiOVZFNGpmX09rX282NHpiVFRsY3VOSmFqSG10NnY5VERWclUwQ2R2R1JEQSIsImNydiI6IlAtMjU2In19" +
		".eyJqdGkiOiJlMWozVl9iS2ljOC1MQUVCIiwiaHRtIjoiR0VUIiwiaHR1IjoiaHR0cHM6Ly9yZXNvdXJjZS5leGFtcGxlLm9yZy9wcm90ZWN0ZWRyZXNvdXJjZSIsImlhdCI6MTU2MjI2MjYxOCwiYXRoIjoiZlVIeU8ycjJaM0RaNTNFc05yV0JiMHhXWG9hTnk1OUlpS0NBcWtzbVFFbyJ9" +
		".2oW9RP35yRqzhrtNP86L-Ey71EOptxRimPPToA1plemAgR6pxHF8y6-yqyVnmcw6Fy1dqd-jfxSYoMxhAJpLjA"
	// rfcAccessToken is the DPoP-bound access token of figure 12 (section
	// 7.1); its hash is figure 14's ath.
	rfcAccessToken = "Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"
	rfcATH         = "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
	// rfcJKT is the key's thumbprint: the cnf.jkt of sections 6.1 and
	// 6.2 (figures 8 and 11).
	rfcJKT = "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I"
)

func TestRFC9449TokenRequestProof(t *testing.T) {
	p, err := dpop.Verify(dpop.Input{
		Headers: []string{rfcTokenProof}, Method: "POST", URI: "https://server.example.com/token",
		Now: time.Unix(1562262616, 0),
	})
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := dpop.Proof{JKT: rfcJKT, JTI: "-BwC3ESc6acc2lTc", IssuedAt: time.Unix(1562262616, 0), Algorithm: "ES256"}
	if p != want {
		t.Fatalf("proof %+v, want %+v", p, want)
	}
}

func TestRFC9449ResourceRequestProof(t *testing.T) {
	if got := dpop.AccessTokenHash(rfcAccessToken); got != rfcATH {
		t.Fatalf("AccessTokenHash = %q, want figure 14's ath %q", got, rfcATH)
	}
	in := dpop.Input{
		Headers: []string{rfcResourceProof}, Method: "GET", URI: "https://resource.example.org/protectedresource",
		AccessToken: rfcAccessToken, Now: time.Unix(1562262618, 0),
	}
	p, err := dpop.Verify(in)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := dpop.Proof{JKT: rfcJKT, JTI: "e1j3V_bKic8-LAEB", IssuedAt: time.Unix(1562262618, 0), Algorithm: "ES256"}
	if p != want {
		t.Fatalf("proof %+v, want %+v", p, want)
	}
	if err := dpop.CheckBinding(p, rfcJKT); err != nil {
		t.Fatalf("CheckBinding with the RFC's jkt: %v", err)
	}
	// The same proof with another token: its ath no longer matches.
	in.AccessToken = rfcAccessToken + "x"
	if _, err := dpop.Verify(in); err == nil || err.Error() != "dpop: invalid_dpop_proof: the DPoP proof's ath does not match the access token" {
		t.Fatalf("another token: %v", err)
	}
	// Figure 2's proof is for another method and URI.
	in.Headers, in.AccessToken = []string{rfcTokenProof}, rfcAccessToken
	if _, err := dpop.Verify(in); err == nil {
		t.Fatal("the token request's proof verified for the resource request")
	}
}

// The worked example of the DPoP guide
// (resourceserver/apidocs/guides/dpop.md, A worked example), made by the SDK: a token
// request's proof and an API request's proof with ath, one key.
const (
	guideTokenProof = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7ImNydiI6IlAtMjU2Iiwia3R5IjoiRUMiLCJ4IjoialgyS0dkTlFKX1VYblBtd0d5bzRLWC00UkVfVEN6aFFnUG9POVVWaktJVSIsInkiOiJDc3Nxc1BIZ1NIUGxZZURsaDdRNHF4UXg4RXRRYnoxeUtyNDhYNmFadnhBIn19.eyJqdGkiOiJIVTRJSVNydjF4ZEJ3WEJwWmZ5NDZRIiwiaHRtIjoiUE9TVCIsImh0dSI6Imh0dHBzOi8vYXBpLmV4YW1wbGUuY29tL2FwaS92MS9vYXV0aC90b2tlbi8iLCJpYXQiOjE3OTUwMDAwMDB9.gJzIInvldhL4KUfrbQpRgFhIQr0A0dnVPsBXqtcWaDLKOlfrP85Jiz9DN-3wUS3ZrNLjArwl-lp2P5wseizdrg"
	guideAPIProof   = "eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2IiwiandrIjp7ImNydiI6IlAtMjU2Iiwia3R5IjoiRUMiLCJ4IjoialgyS0dkTlFKX1VYblBtd0d5bzRLWC00UkVfVEN6aFFnUG9POVVWaktJVSIsInkiOiJDc3Nxc1BIZ1NIUGxZZURsaDdRNHF4UXg4RXRRYnoxeUtyNDhYNmFadnhBIn19.eyJqdGkiOiJNTU1mcDMzaEtFem1IZ2JSM0hzWUJnIiwiaHRtIjoiR0VUIiwiaHR1IjoiaHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20vYXBpL3YxL21lLyIsImlhdCI6MTc5NTAwMDAwMiwiYXRoIjoiem1ETmlPUVVXVG1ldm8yR01GMF9jYlhLTDRiY2UzUS1ING1laVZmZUo2RSJ9.QC77esKpXihzotobXk1L-Hlik_PbSchBmnmtLGPZa6UzhaRQQJkFXu9YJ4L_qHorJugKerh_yQ7cRjt488k7ug"
	guideToken      = "svc_at_eyJhbGciOiJFZERTQSJ9.example.token"
	guideJKT        = "8wJbJnEC-VAmXna0SkhNJZKSnWm1lnWvIzYvxTk5Aoc"
)

func TestGuideExample(t *testing.T) {
	p, err := dpop.Verify(dpop.Input{Headers: []string{guideTokenProof}, Method: "POST", URI: "https://api.example.com/api/v1/oauth/token/", Now: time.Unix(1795000000, 0)})
	if err != nil || p.JKT != guideJKT || p.JTI != "HU4IISrv1xdBwXBpZfy46Q" {
		t.Fatalf("token request proof: %+v, %v", p, err)
	}
	p, err = dpop.Verify(dpop.Input{Headers: []string{guideAPIProof}, Method: "GET", URI: "https://api.example.com/api/v1/me/",
		AccessToken: guideToken, Now: time.Unix(1795000002, 0)})
	if err != nil || p.JKT != guideJKT || p.JTI != "MMMfp33hKEzmHgbR3HsYBg" {
		t.Fatalf("API request proof: %+v, %v", p, err)
	}
	if err := dpop.CheckBinding(p, guideJKT); err != nil {
		t.Fatal(err)
	}
}
