package clients_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// publicJWKS is a JWK set of one fresh P-256 public key named kid.
func publicJWKS(t *testing.T, kid string) []byte {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := jwk.Import(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	_ = k.Set(jwk.KeyIDKey, kid)
	set := jwk.NewSet()
	_ = set.AddKey(k)
	b, _ := json.Marshal(set)
	return b
}

// testClientKeys: a private_key_jwt client is made with its keys and no
// secret; ClientKeys reads them with their version; rotate-keys replaces
// them (a set, then a jwks_uri) and raises the generation; secret changes
// are refused for it, key changes for a secret client.
func testClientKeys(t *testing.T, e *env) {
	e.org(t, "acme", clients.EnvironmentLive)
	c, secret := e.client(t, clients.ClientSpec{OrgSlug: "acme", Name: "keyed", Audience: clients.AudienceHospital,
		Scopes: []string{clients.ScopePatientsRead}, Keys: &clients.ClientKeySource{JWKS: publicJWKS(t, "k1")}})
	if secret != "" || c.AuthMethod != clients.AuthPrivateKeyJWT || len(c.Secrets) != 0 || c.KeysVersion != 1 {
		t.Fatalf("created %+v with secret %q", c, secret)
	}
	k, err := e.store.ClientKeys(ctx(t), c.ID)
	if err != nil || !k.Keyed || k.Version != "1" || k.Set == nil || k.Set.Len() != 1 || k.URL != "" {
		t.Fatalf("ClientKeys = %+v, %v", k, err)
	}
	if got, err := e.store.RotateKeys(ctx(t), c.ID, clients.ClientKeySource{URL: "https://keys.partner.example/jwks.json"}); err != nil ||
		got.Generation != 2 || got.KeysVersion != 2 || got.JWKSURI != "https://keys.partner.example/jwks.json" {
		t.Fatalf("RotateKeys to a URL = %+v, %v", got, err)
	}
	if k, err := e.store.ClientKeys(ctx(t), c.ID); err != nil || k.URL != "https://keys.partner.example/jwks.json" || k.Version != "2" || k.Set != nil {
		t.Fatalf("ClientKeys after rotation = %+v, %v", k, err)
	}
	if got, err := e.store.RotateKeys(ctx(t), c.ID, clients.ClientKeySource{JWKS: publicJWKS(t, "k2")}); err != nil || got.JWKSURI != "" || got.Generation != 3 {
		t.Fatalf("RotateKeys back to a set = %+v, %v", got, err)
	}
	if _, _, err := e.store.RotateSecret(ctx(t), c.ID); !errors.Is(err, clients.ErrConflict) {
		t.Fatalf("rotate-secret of a key client: %v", err)
	}
	if _, _, _, err := e.store.AddSecret(ctx(t), c.ID); !errors.Is(err, clients.ErrConflict) {
		t.Fatalf("add-secret of a key client: %v", err)
	}
	plain, _ := e.client(t, clients.ClientSpec{OrgSlug: "acme", Name: "plain", Audience: clients.AudiencePharma})
	if _, err := e.store.RotateKeys(ctx(t), plain.ID, clients.ClientKeySource{JWKS: publicJWKS(t, "k")}); !errors.Is(err, clients.ErrConflict) {
		t.Fatalf("rotate-keys of a secret client: %v", err)
	}
	if k, err := e.store.ClientKeys(ctx(t), plain.ID); err != nil || k.Keyed {
		t.Fatalf("ClientKeys of a secret client = %+v, %v", k, err)
	}
	// Bad key sets are refused with every problem named.
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pk, _ := jwk.Import(priv)
	set := jwk.NewSet()
	_ = set.AddKey(pk)
	privSet, _ := json.Marshal(set)
	for name, tc := range map[string]struct {
		src  clients.ClientKeySource
		want string
	}{
		"a private key": {clients.ClientKeySource{JWKS: privSet}, "only public keys"},
		"no kid":        {clients.ClientKeySource{JWKS: []byte(strings.Replace(string(publicJWKS(t, "x")), `"kid":"x",`, "", 1))}, `a "kid" is required`},
		"http URL":      {clients.ClientKeySource{URL: "http://keys.example/jwks.json"}, "must be https"},
		"both":          {clients.ClientKeySource{JWKS: publicJWKS(t, "x"), URL: "https://keys.example/"}, "not both"},
		"not JSON":      {clients.ClientKeySource{JWKS: []byte("{")}, "not a JWK set"},
	} {
		_, _, err := e.store.CreateClient(ctx(t), clients.ClientSpec{OrgSlug: "acme", Name: "bad", Audience: clients.AudiencePharma, Keys: &tc.src})
		if !errors.Is(err, clients.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", name, err, tc.want)
		}
	}
}
