//go:build unix

package tokenholes

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
)

// signAs signs claims with k under a header of its kid, the given alg
// and typ ("": none).
func signAs(t *testing.T, k partnerKey, alg jwa.SignatureAlgorithm, typ string, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	h := jws.NewHeaders()
	_ = h.Set(jws.KeyIDKey, k.KID)
	if typ != "" {
		_ = h.Set(jws.TypeKey, typ)
	}
	b, err := jws.Sign(payload, jws.WithKey(alg, k.Signer, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jwksWithAlgs is the public JWK set of keys, each key's "alg" the one
// given beside it ("": none).
func jwksWithAlgs(t *testing.T, keys []partnerKey, algs []string) []byte {
	t.Helper()
	set := jwk.NewSet()
	for i, k := range keys {
		pub := k.PublicJWK(t)
		if algs[i] != "" {
			if err := pub.Set(jwk.AlgorithmKey, algs[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := set.AddKey(pub); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ed25519Proof is a DPoP proof (RFC 9449 section 4.2) signed with priv
// under alg ("EdDSA" or "Ed25519"), with ath for accessToken when one is
// given.
func ed25519Proof(priv ed25519.PrivateKey, alg, method, uri, accessToken string) string {
	b64 := base64.RawURLEncoding.EncodeToString
	x := b64(priv.Public().(ed25519.PublicKey))
	hdr, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": alg, "jwk": map[string]string{"kty": "OKP", "crv": "Ed25519", "x": x}})
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	c := map[string]any{"jti": b64(jti), "htm": method, "htu": uri, "iat": time.Now().Unix()}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		c["ath"] = b64(sum[:])
	}
	claims, _ := json.Marshal(c)
	input := b64(hdr) + "." + b64(claims)
	return input + "." + b64(ed25519.Sign(priv, []byte(input)))
}

// TestAssertionRules (issue 59, hole 9), on the real binaries:
//
//   - a client assertion whose typ is an access token's (at+jwt) or a DPoP
//     proof's (dpop+jwt) is refused, as one whose aud array names a
//     foreign audience beside the token endpoint (draft-ietf-oauth-
//     rfc7523bis); the token endpoint URL or the issuer alone, as a string
//     or a one-member array, is accepted;
//   - an Ed25519 key registered with alg EdDSA verifies an assertion
//     signed under Ed25519 (RFC 9864), and the reverse (the code the issue
//     was filed against answered both a bare invalid_client);
//   - a DPoP proof signed under Ed25519 gets a DPoP-bound token, and /me
//     admits that token with another such proof;
//   - the metadata advertises both names for assertions and DPoP proofs.
func TestAssertionRules(t *testing.T) {
	s := startStack(t)
	hc := s.hc
	es := assertiontest.NewKey(t, "es", jwa.ES256())
	edA := assertiontest.NewKey(t, "ed-eddsa", jwa.EdDSA())
	edB := assertiontest.NewKey(t, "ed-ed25519", jwa.EdDSA())
	id := s.keyClient(t, "assertions", jwksWithAlgs(t, []partnerKey{es, edA, edB}, []string{"ES256", "EdDSA", "Ed25519"}))
	claims := func(aud any) map[string]any {
		c := assertiontest.Claims(id, s.auth, time.Now())
		c["aud"] = aud
		return c
	}
	tokenURL := s.auth + pathToken
	refused := map[string]string{
		"typ at+jwt":                      signAs(t, es, jwa.ES256(), "at+jwt", claims(tokenURL)),
		"typ application/at+jwt":          signAs(t, es, jwa.ES256(), "application/at+jwt", claims(tokenURL)),
		"typ dpop+jwt":                    signAs(t, es, jwa.ES256(), "dpop+jwt", claims(tokenURL)),
		"aud: foreign beside token URL":   signAs(t, es, jwa.ES256(), "JWT", claims([]string{"https://elsewhere.example", tokenURL})),
		"aud: issuer beside foreign":      signAs(t, es, jwa.ES256(), "JWT", claims([]string{s.auth, "https://elsewhere.example"})),
		"aud: issuer and token URL, both": signAs(t, es, jwa.ES256(), "JWT", claims([]string{s.auth, tokenURL})),
	}
	for name, a := range refused {
		wantAnswer(t, name, post(t, hc, tokenURL, formType, assertionForm(a)), http.StatusUnauthorized, bodyInvalidClient)
	}
	accepted := map[string]string{
		"aud: token URL":               signAs(t, es, jwa.ES256(), "JWT", claims(tokenURL)),
		"aud: [token URL]":             signAs(t, es, jwa.ES256(), "JWT", claims([]string{tokenURL})),
		"aud: [issuer]":                signAs(t, es, jwa.ES256(), "", claims([]string{s.auth})),
		"EdDSA key, Ed25519 signature": signAs(t, edA, jwa.EdDSAEd25519(), "JWT", claims(tokenURL)),
		"EdDSA key, EdDSA signature":   signAs(t, edA, jwa.EdDSA(), "JWT", claims(tokenURL)),
		"Ed25519 key, EdDSA signature": signAs(t, edB, jwa.EdDSA(), "JWT", claims(tokenURL)),
		"Ed25519 key, Ed25519":         signAs(t, edB, jwa.EdDSAEd25519(), "JWT", claims(tokenURL)),
	}
	for name, a := range accepted {
		accessToken(t, name, post(t, hc, tokenURL, formType, assertionForm(a)), "Bearer")
	}

	// DPoP under Ed25519, at the token endpoint and at the API.
	secretID, secret := s.secretClient(t, "dpop")
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	proof := ed25519Proof(priv, "Ed25519", "POST", tokenURL, "")
	tok := accessToken(t, "token with an Ed25519 proof", post(t, hc, tokenURL, formType, grant, e2etest.Basic(secretID, secret), e2etest.Header("DPoP", proof)), "DPoP")
	proof = ed25519Proof(priv, "Ed25519", "GET", s.api+pathMe, tok)
	me := get(t, hc, s.api+pathMe, e2etest.Header("Authorization", "DPoP "+tok), e2etest.Header("DPoP", proof))
	if me.status != http.StatusOK {
		t.Fatalf("/me with an Ed25519 proof: %v", me)
	}

	var meta map[string]any
	if err := json.Unmarshal(get(t, hc, s.auth+"/.well-known/oauth-authorization-server").body, &meta); err != nil {
		t.Fatal(err)
	}
	for _, member := range []string{"dpop_signing_alg_values_supported", "token_endpoint_auth_signing_alg_values_supported"} {
		algs, _ := meta[member].([]any)
		if !slices.Contains(algs, any("EdDSA")) || !slices.Contains(algs, any("Ed25519")) {
			t.Errorf("metadata %s = %v, want EdDSA and Ed25519", member, algs)
		}
	}
}

// TestVerifiedAssertionNotLockedOut (issue 59, hole 10): from one address,
// 60 failed assertions for a private_key_jwt client with made-up kids (a
// neighbour behind the same NAT, or a guesser) spend that address's
// failure budget for the client: the 61st is 429. But the client's own
// valid assertions from that address still get tokens, however many,
// under its token limit; the made-up ones stay refused. (On the code the
// issue was filed against, the valid ones were 429 for the rest of the
// minute.)
func TestVerifiedAssertionNotLockedOut(t *testing.T) {
	s := prepare(t)
	s.startAuth(t)
	k := assertiontest.NewKey(t, "partner", jwa.ES256())
	id := s.keyClient(t, "locked", assertiontest.JWKS(t, k))
	s.CLI(t, "clients", "set-rate-limit", id, "1000", "--token")
	nat := from("127.0.10.1")
	tokenURL := s.auth + pathToken
	madeUp := func(i int) string {
		return assertiontest.NewKey(t, "made-up-"+strconv.Itoa(i), jwa.ES256()).Assertion(t, id, tokenURL)
	}
	for i := range 60 {
		wantAnswer(t, "made-up kid "+strconv.Itoa(i), post(t, nat, tokenURL, formType, assertionForm(madeUp(i))), http.StatusUnauthorized, bodyInvalidClient)
	}
	a := post(t, nat, tokenURL, formType, assertionForm(madeUp(60)))
	wantAnswer(t, "the 61st made-up kid", a, http.StatusTooManyRequests, bodyBudgetSpent)
	for i := range 5 {
		accessToken(t, "valid assertion "+strconv.Itoa(i)+" after the budget was spent", post(t, nat, tokenURL, formType, assertionForm(k.Assertion(t, id, tokenURL))), "Bearer")
	}
	wantAnswer(t, "a made-up kid after", post(t, nat, tokenURL, formType, assertionForm(madeUp(61))), http.StatusTooManyRequests, bodyBudgetSpent)
	// A replayed valid assertion is still refused.
	valid := k.Assertion(t, id, tokenURL)
	accessToken(t, "a fresh assertion", post(t, nat, tokenURL, formType, assertionForm(valid)), "Bearer")
	if a := post(t, nat, tokenURL, formType, assertionForm(valid)); a.status == http.StatusOK {
		t.Fatalf("a replayed assertion: %v", a)
	}
}
