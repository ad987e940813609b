package sdk

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// testKey is a partner key pair: its private JWK (what the partner keeps)
// and its public JWK set (what the operator registers).
type testKey struct {
	private []byte
	public  []byte
}

func newTestKey(t *testing.T, kid, alg string) testKey {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case partnerclient.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case partnerclient.RS256:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case partnerclient.EdDSA, partnerclient.Ed25519:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil || priv == nil {
		t.Fatalf("key %s: %v", alg, err)
	}
	marshal := func(raw any, set bool) []byte {
		k, err := jwk.Import(raw)
		if err != nil {
			t.Fatal(err)
		}
		_ = k.Set(jwk.KeyIDKey, kid)
		var v any = k
		if set {
			s := jwk.NewSet()
			_ = s.AddKey(k)
			v = s
		} else {
			_ = k.Set(jwk.AlgorithmKey, alg)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return testKey{private: marshal(priv, false), public: marshal(priv.Public(), true)}
}

// keyClient creates a private_key_jwt client of org "acme" with the
// public keys of k and returns its id.
func (s *stack) keyClient(k testKey) string {
	s.t.Helper()
	c, secret, err := s.store.CreateClient(context.Background(), clients.ClientSpec{
		OrgSlug: "acme", Name: "keyed", Audience: clients.AudienceHospital, Scopes: []string{clients.ScopePatientsRead},
		Keys: &clients.ClientKeySource{JWKS: k.public},
	})
	if err != nil || secret != "" {
		s.t.Fatalf("create: %v (secret %q)", err, secret)
	}
	return c.ID
}

// keyConfig is the SDK configuration of client id with the private JWK of
// k, read with partnerclient.ParsePrivateJWK.
func (s *stack) keyConfig(t *testing.T, id string, k testKey) partnerclient.Config {
	t.Helper()
	j, err := partnerclient.ParsePrivateJWK(k.private)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.config(id, "", &sleeper{})
	cfg.PrivateKey, cfg.KeyID, cfg.Algorithm = j.Key, j.KeyID, j.Algorithm
	return cfg
}

// meStatus is the status of GET /api/v1/me/ with token, on the wire.
func (s *stack) meStatus(t *testing.T, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.url+pathMe, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestPrivateKeyJWT: the SDK authenticates with a registered key of each
// kind (ES256, EdDSA and its RFC 9864 name Ed25519, RS256), its assertions' "aud" the token endpoint URL
// (the SDK's default) or the issuer; a key the server does not know gets
// a *TokenError invalid_client, not retried.
func TestPrivateKeyJWT(t *testing.T) {
	t.Parallel()
	for _, alg := range []string{partnerclient.ES256, partnerclient.EdDSA, partnerclient.Ed25519, partnerclient.RS256} {
		for _, aud := range []string{"token URL", "issuer"} {
			t.Run(alg+" aud "+aud, func(t *testing.T) {
				t.Parallel()
				s := newStack(t, selfIssued())
				k := newTestKey(t, "k-"+alg, alg)
				id := s.keyClient(k)
				cfg := s.keyConfig(t, id, k)
				if aud == "issuer" {
					cfg.AssertionAudience = s.issuer
				}
				c, err := partnerclient.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				me, err := c.Me(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if me.ClientID != id || me.Name != "keyed" {
					t.Fatalf("me = %+v", me)
				}
				if n := s.tokens.Load(); n != 1 {
					t.Fatalf("%d token requests, want 1", n)
				}
			})
		}
	}
	t.Run("wrong key", func(t *testing.T) {
		t.Parallel()
		s := newStack(t, selfIssued())
		id := s.keyClient(newTestKey(t, "k1", partnerclient.ES256))
		c, err := partnerclient.New(s.keyConfig(t, id, newTestKey(t, "k1", partnerclient.ES256)))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Me(context.Background())
		var te *partnerclient.TokenError
		if !errors.As(err, &te) || te.StatusCode != http.StatusUnauthorized || te.Code != "invalid_client" || te.Description != "Client authentication failed" {
			t.Fatalf("err = %v, want a *TokenError 401 invalid_client", err)
		}
		if n, m := s.tokens.Load(), s.api.Load(); n != 1 || m != 0 {
			t.Fatalf("%d token requests (want 1, no retry), %d API requests (want 0)", n, m)
		}
	})
}

// TestRevokeCached: RevokeCached revokes the cached token on the server
// (the API answers 401 for it at once) and drops it; the next call gets a
// fresh token.
func TestRevokeCached(t *testing.T) {
	t.Parallel()
	s := newStack(t, selfIssued())
	k := newTestKey(t, "k1", partnerclient.EdDSA)
	id := s.keyClient(k)
	c, err := partnerclient.New(s.keyConfig(t, id, k))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Me(ctx); err != nil {
		t.Fatal(err)
	}
	old, err := c.TokenSource().TokenContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.meStatus(t, old.AccessToken); got != http.StatusOK {
		t.Fatalf("the cached token: %d before RevokeCached", got)
	}
	if err := c.TokenSource().RevokeCached(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.meStatus(t, old.AccessToken); got != http.StatusUnauthorized {
		t.Fatalf("the revoked token: %d, want 401", got)
	}
	if _, err := c.Me(ctx); err != nil {
		t.Fatal(err)
	}
	fresh, _ := c.TokenSource().TokenContext(ctx)
	if n := s.tokens.Load(); n != 2 || fresh.AccessToken == old.AccessToken {
		t.Fatalf("%d token requests (want 2), fresh token: %v", n, fresh.AccessToken != old.AccessToken)
	}
	if got := s.meStatus(t, fresh.AccessToken); got != http.StatusOK {
		t.Fatalf("the fresh token: %d", got)
	}
	// Nothing cached: nothing to revoke.
	if err := c.TokenSource().RevokeCached(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.TokenSource().RevokeCached(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.meStatus(t, fresh.AccessToken); got != http.StatusUnauthorized {
		t.Fatalf("the fresh token after RevokeCached: %d, want 401", got)
	}
}

// TestRevoke: Revoke with HTTP Basic and with private_key_jwt kills the
// token at the API; an unknown token is revoked without error (RFC 7009
// section 2.2); another client's token is refused with a *TokenError.
func TestRevoke(t *testing.T) {
	t.Parallel()
	s := newStack(t, selfIssued())
	ctx := context.Background()
	secretID, secret := s.client(clients.AudienceHospital, clients.ScopePatientsRead)
	k := newTestKey(t, "k1", partnerclient.ES256)
	keyID := s.keyClient(k)
	basic, err := partnerclient.NewTokenSource(s.config(secretID, secret, &sleeper{}))
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := partnerclient.NewTokenSource(s.keyConfig(t, keyID, k))
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]*partnerclient.TokenSource{"Basic": basic, "private_key_jwt": keyed} {
		tok, err := src.TokenContext(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := s.meStatus(t, tok.AccessToken); got != http.StatusOK {
			t.Fatalf("%s: token %d before Revoke", name, got)
		}
		if err := src.Revoke(ctx, tok.AccessToken); err != nil {
			t.Fatalf("%s: Revoke: %v", name, err)
		}
		if got := s.meStatus(t, tok.AccessToken); got != http.StatusUnauthorized {
			t.Fatalf("%s: revoked token %d, want 401", name, got)
		}
		if err := src.Revoke(ctx, "svc_at_unknown.token.here"); err != nil {
			t.Fatalf("%s: revoking an unknown token: %v", name, err)
		}
	}
	// Revoke leaves the cache alone: the revoked token is dropped from it
	// by hand, and the next one is fresh.
	old, _ := keyed.TokenContext(ctx)
	keyed.Invalidate(old.AccessToken)
	other, err := keyed.TokenContext(ctx)
	if err != nil || other.AccessToken == old.AccessToken {
		t.Fatal(err)
	}
	err = basic.Revoke(ctx, other.AccessToken)
	var te *partnerclient.TokenError
	if !errors.As(err, &te) || te.StatusCode != http.StatusBadRequest || te.Code != "unauthorized_client" || te.Description != "the token was not issued to this client" {
		t.Fatalf("revoking another client's token: %v", err)
	}
	if got := s.meStatus(t, other.AccessToken); got != http.StatusOK {
		t.Fatalf("another client's token after a refused revocation: %d", got)
	}
	var revocations []int
	for _, a := range s.history() {
		if a.Path == "/api/v1/oauth/revoke/" {
			revocations = append(revocations, a.Status)
		}
	}
	if want := []int{200, 200, 200, 200, 400}; !equalInts(revocations, want) {
		t.Fatalf("revocation answers %v, want %v", revocations, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
