package sdk

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// TestDPoPTokenFromServer: the SDK with Config.DPoPKey gets a DPoP-bound
// token from the real token service (RFC 9449 section 5): token_type DPoP,
// its cnf.jkt the key's thumbprint, as introspection tells (section 6.2);
// a client registered with dpop_bound_access_tokens gets the refusal
// invalid_dpop_proof from the SDK without a key, and a token with one.
func TestDPoPTokenFromServer(t *testing.T) {
	s := newStack(t, selfIssued())
	id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.config(id, secret, &sleeper{})
	cfg.DPoPKey = key
	c, err := partnerclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.TokenSource().TokenContext(context.Background())
	if err != nil {
		t.Fatalf("Token: %v", err)
	}
	jkt, err := partnerclient.DPoPThumbprint(key.Public())
	if err != nil || jkt != c.TokenSource().DPoPThumbprint() {
		t.Fatalf("thumbprint %q (%v), token source's %q", jkt, err, c.TokenSource().DPoPThumbprint())
	}
	if tok.TokenType != partnerclient.TokenTypeDPoP {
		t.Fatalf("token_type %q, want DPoP", tok.TokenType)
	}
	status, body := s.post(tokenserver.PathIntrospect, url.Values{"token": {tok.AccessToken}}, id, secret)
	var in struct {
		Active    bool              `json:"active"`
		TokenType string            `json:"token_type"`
		Cnf       map[string]string `json:"cnf"`
	}
	if err := json.Unmarshal(body, &in); status != http.StatusOK || err != nil || !in.Active || in.TokenType != "DPoP" ||
		len(in.Cnf) != 1 || in.Cnf["jkt"] != jkt {
		t.Fatalf("introspection: %d %s; want active, token_type DPoP, cnf.jkt %s", status, body, jkt)
	}

	// A client registered for DPoP-bound tokens only.
	bound, boundSecret, err := s.store.CreateClient(context.Background(), clients.ClientSpec{OrgSlug: "acme", Name: "bound",
		Audience: clients.AudiencePharma, Scopes: []string{clients.ScopeEventsSubscribe}, DPoPBound: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := partnerclient.New(s.config(bound.ID, boundSecret, &sleeper{}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = plain.TokenSource().TokenContext(context.Background())
	var te *partnerclient.TokenError
	if !errors.As(err, &te) || te.StatusCode != http.StatusBadRequest || te.Code != partnerclient.ErrorInvalidDPoPProof {
		t.Fatalf("bound client without a DPoP key: %v, want 400 invalid_dpop_proof", err)
	}
	cfg = s.config(bound.ID, boundSecret, &sleeper{})
	cfg.DPoPKey = key
	withKey, err := partnerclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := withKey.TokenSource().TokenContext(context.Background()); err != nil || tok.TokenType != partnerclient.TokenTypeDPoP {
		t.Fatalf("bound client with a DPoP key: %+v, %v", tok, err)
	}
}

// newDPoPProof is a DPoP proof (RFC 9449 section 4.2) for method and htu
// at iat, signed with a new ES256 key: what a client's JOSE library makes.
func newDPoPProof(t testing.TB, method, htu string, iat time.Time) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
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
	payload, _ := json.Marshal(map[string]any{"jti": rand.Text(), "htm": method, "htu": htu, "iat": iat.Unix()})
	out, err := jws.Sign(payload, jws.WithKey(jwa.ES256(), key, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// post sends a form to the stack with HTTP Basic and reads the answer.
func (s *stack) post(path string, form url.Values, id, secret string) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url+path, strings.NewReader(form.Encode()))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}
