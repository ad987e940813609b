package topology

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/dpop/dpoptest"
)

// dpopJourney is the DPoP leg of the journey (RFC 9449) on the real
// binaries behind the edge: a token request with a proof gets a DPoP-bound
// token; /me answers its owner's proofs on every resource-server replica
// (the edge round-robins); a proof sent twice is refused on whichever
// replica sees it second (the replay mark is in Redis, in the admission's
// round trip); a thief with the same token and a proof of its own key, or
// with the Bearer scheme, is refused 401 with the DPoP challenge while the
// owner keeps working. On a Cluster every key of the client, the replay
// marks included, shares the client's hash tag.
func dpopJourney(t *testing.T, top *topology) {
	t.Helper()
	c := top.createClient(t, "events.subscribe")
	owner, thief := dpoptest.NewKey(), dpoptest.NewKey()
	tokenURL, meURL := top.edge+"/api/v1/oauth/token/", top.edge+"/api/v1/me/"

	a := top.tokenRequest(t, c, basicAuth, http.Header{"Dpop": {owner.Sign(dpoptest.Proof{Method: http.MethodPost, URI: tokenURL})}})
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &body) != nil || body.TokenType != "DPoP" || !strings.HasPrefix(body.AccessToken, "svc_at_") {
		t.Fatalf("DPoP token request: %d %s", a.status, a.body)
	}
	tok := body.AccessToken

	me := func(scheme string, proof string) answer {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, meURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", scheme+" "+tok)
		if proof != "" {
			req.Header.Set("DPoP", proof)
		}
		return top.do(t, req)
	}
	ownerProof := func() string {
		return owner.Sign(dpoptest.Proof{Method: http.MethodGet, URI: meURL, AccessToken: tok})
	}
	wantOwner := func(when string) {
		t.Helper()
		a := me("DPoP", ownerProof())
		var got struct {
			ClientID string `json:"client_id"`
		}
		if a.status != http.StatusOK || json.Unmarshal(a.body, &got) != nil || got.ClientID != c.ID {
			t.Fatalf("%s: the owner's /me: %d %s", when, a.status, a.body)
		}
	}
	for range 2 * len(top.resource) {
		wantOwner("every replica")
	}

	const algs = `algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`
	refused := func(what string, a answer, challenge, detail string) {
		t.Helper()
		if a.status != http.StatusUnauthorized || a.header.Get("WWW-Authenticate") != challenge || string(a.body) != detail {
			t.Errorf("%s: %d %q %s;\nwant 401 %q %s", what, a.status, a.header.Get("WWW-Authenticate"), a.body, challenge, detail)
		}
	}
	// One proof twice: the first is admitted, the second refused, whichever
	// replica takes each.
	p := ownerProof()
	if a := me("DPoP", p); a.status != http.StatusOK {
		t.Fatalf("the proof's first use: %d %s", a.status, a.body)
	}
	refused("the same proof again", me("DPoP", p),
		`DPoP error="invalid_dpop_proof", error_description="the DPoP proof was used before", `+algs,
		`{"detail":"the DPoP proof was used before"}`)
	wantOwner("after the replay")

	refused("a thief's own key", me("DPoP", thief.Sign(dpoptest.Proof{Method: http.MethodGet, URI: meURL, AccessToken: tok})),
		`DPoP error="invalid_dpop_proof", error_description="the DPoP proof's key is not the key the access token is bound to", `+algs,
		`{"detail":"the DPoP proof's key is not the key the access token is bound to"}`)
	wantOwner("after the thief's proof")
	refused("the Bearer scheme", me("Bearer", ""), `DPoP error="invalid_token", `+algs,
		`{"detail":"invalid, expired or revoked access token"}`)
	wantOwner("after the thief's Bearer")
}
