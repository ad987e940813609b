package sdk

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// TestDPoPJourney: the SDK with a DPoP key gets a DPoP-bound token from
// the real token service and calls GET /api/v1/me/ with its proofs (RFC
// 9449 section 7.1); a thief holding the same access token, with a proof
// of its own key or with the Bearer scheme, is refused 401 with the DPoP
// challenge (section 7.2) while the owner keeps working; the token revoked
// (RFC 7009) is refused too.
func TestDPoPJourney(t *testing.T) {
	s := newStack(t, selfIssued())
	ctx := context.Background()
	id, secret := s.client(clients.AudienceHospital, clients.ScopePatientsRead)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.config(id, secret, &sleeper{})
	cfg.DPoPKey = key
	owner, err := partnerclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := owner.TokenSource().TokenContext(ctx)
	if err != nil || tok.TokenType != partnerclient.TokenTypeDPoP {
		t.Fatalf("token: %+v, %v; want token_type DPoP", tok, err)
	}
	ownerMe := func(when string) {
		t.Helper()
		me, err := owner.Me(ctx)
		if err != nil || me.ClientID != id {
			t.Fatalf("%s: owner's /me: %+v, %v", when, me, err)
		}
	}
	ownerMe("first call")

	thief, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const algs = `algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`
	for _, c := range []struct {
		name, scheme string
		proof        bool
		challenge    string
		body         string
	}{
		{"its own key's proof", "DPoP", true,
			`DPoP error="invalid_dpop_proof", error_description="the DPoP proof's key is not the key the access token is bound to", ` + algs,
			`{"detail":"the DPoP proof's key is not the key the access token is bound to"}`},
		{"the Bearer scheme", "Bearer", false,
			`DPoP error="invalid_token", ` + algs,
			`{"detail":"invalid, expired or revoked access token"}`},
		{"the Bearer scheme with its proof", "Bearer", true,
			`DPoP error="invalid_token", ` + algs,
			`{"detail":"invalid, expired or revoked access token"}`},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+pathMe, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", c.scheme+" "+tok.AccessToken)
		if c.proof {
			req.Header.Set("DPoP", boundProof(t, thief, http.MethodGet, s.url+pathMe, tok.AccessToken))
		}
		status, header, body := do(t, req)
		if status != http.StatusUnauthorized || header.Get("WWW-Authenticate") != c.challenge ||
			header.Get("Content-Type") != "application/json; charset=utf-8" || body != c.body {
			t.Errorf("thief with %s: %d %q %q %s;\nwant 401 %q %s", c.name, status,
				header.Get("WWW-Authenticate"), header.Get("Content-Type"), body, c.challenge, c.body)
		}
		ownerMe("after the thief's attempt with " + c.name)
	}

	if err := owner.TokenSource().Revoke(ctx, tok.AccessToken); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+pathMe, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "DPoP "+tok.AccessToken)
	req.Header.Set("DPoP", boundProof(t, key, http.MethodGet, s.url+pathMe, tok.AccessToken))
	status, header, body := do(t, req)
	if want, wantBody := `DPoP error="invalid_token", `+algs, `{"detail":"invalid, expired or revoked access token"}`; status != http.StatusUnauthorized ||
		header.Get("WWW-Authenticate") != want || body != wantBody {
		t.Fatalf("the revoked token with the owner's proof: %d %q %s; want 401 %q %s", status, header.Get("WWW-Authenticate"), body, want, wantBody)
	}
}

// boundProof is a DPoP proof (RFC 9449 section 4.2) for method and htu,
// signed with key, with the ath of accessToken (section 4.3): what a
// client presents with a DPoP-bound token at the API.
func boundProof(t testing.TB, key *ecdsa.PrivateKey, method, htu, accessToken string) string {
	t.Helper()
	pub, err := jwk.Import(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	h := jws.NewHeaders()
	if err := h.Set(jws.TypeKey, "dpop+jwt"); err != nil {
		t.Fatal(err)
	}
	if err := h.Set(jws.JWKKey, pub); err != nil {
		t.Fatal(err)
	}
	ath := sha256.Sum256([]byte(accessToken))
	payload, _ := json.Marshal(map[string]any{"jti": rand.Text(), "htm": method, "htu": htu, "iat": time.Now().Unix(),
		"ath": base64.RawURLEncoding.EncodeToString(ath[:])})
	out, err := jws.Sign(payload, jws.WithKey(jwa.ES256(), key, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// do sends req and returns the answer's status, header and body.
func do(t testing.TB, req *http.Request) (int, http.Header, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(body)
}
