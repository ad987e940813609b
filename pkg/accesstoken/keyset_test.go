package accesstoken_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

func mustKey(t testing.TB, alg string) jwk.Key {
	t.Helper()
	k, err := accesstoken.GenerateKey(alg)
	if err != nil {
		t.Fatalf("GenerateKey(%q): %v", alg, err)
	}
	return k
}

func mustSet(t testing.TB, keys ...jwk.Key) *accesstoken.KeySet {
	t.Helper()
	ks, err := accesstoken.NewKeySet(keys...)
	if err != nil {
		t.Fatalf("NewKeySet: %v", err)
	}
	return ks
}

func kid(t testing.TB, k jwk.Key) string {
	t.Helper()
	id, ok := k.KeyID()
	if !ok || id == "" {
		t.Fatal("key has no kid")
	}
	return id
}

func TestGenerateKey(t *testing.T) {
	for _, tc := range []struct {
		alg     string
		wantAlg string
		kty     jwa.KeyType
	}{
		{"", accesstoken.AlgEdDSA, jwa.OKP()},
		{accesstoken.AlgEdDSA, accesstoken.AlgEdDSA, jwa.OKP()},
		{accesstoken.AlgES256, accesstoken.AlgES256, jwa.EC()},
	} {
		t.Run(tc.wantAlg+"/"+tc.alg, func(t *testing.T) {
			k := mustKey(t, tc.alg)
			if k.KeyType() != tc.kty {
				t.Errorf("kty = %v, want %v", k.KeyType(), tc.kty)
			}
			if a, ok := k.Algorithm(); !ok || a.String() != tc.wantAlg {
				t.Errorf("alg = %v, want %s", a, tc.wantAlg)
			}
			if u, ok := k.KeyUsage(); !ok || u != "sig" {
				t.Errorf("use = %q, want sig", u)
			}
			if priv, err := jwk.IsPrivateKey(k); err != nil || !priv {
				t.Errorf("GenerateKey returned a key that is not private")
			}
			// kid is the RFC 7638 thumbprint (SHA-256, base64url).
			tp, err := k.Thumbprint(crypto.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := kid(t, k), base64.RawURLEncoding.EncodeToString(tp); got != want {
				t.Errorf("kid = %q, want the thumbprint %q", got, want)
			}
			switch tc.wantAlg {
			case accesstoken.AlgEdDSA:
				var raw ed25519.PrivateKey
				if err := jwk.Export(k, &raw); err != nil || len(raw) != ed25519.PrivateKeySize {
					t.Errorf("not an Ed25519 private key: %v", err)
				}
			case accesstoken.AlgES256:
				var raw ecdsa.PrivateKey
				if err := jwk.Export(k, &raw); err != nil || raw.Curve != elliptic.P256() {
					t.Errorf("not a P-256 private key: %v", err)
				}
			}
		})
	}
	if first, second := kid(t, mustKey(t, "")), kid(t, mustKey(t, "")); first == second {
		t.Error("two generated keys share a kid")
	}
	for _, alg := range []string{"RS256", "HS256", "none", "eddsa", "ES384"} {
		if _, err := accesstoken.GenerateKey(alg); err == nil {
			t.Errorf("GenerateKey(%q) succeeded, want an error", alg)
		}
	}
}

func TestKeySetFileRoundTrip(t *testing.T) {
	for _, alg := range []string{accesstoken.AlgEdDSA, accesstoken.AlgES256} {
		t.Run(alg, func(t *testing.T) {
			old := mustKey(t, accesstoken.AlgEdDSA)
			ks := mustSet(t, mustKey(t, alg), old)
			dir := t.TempDir()
			path := filepath.Join(dir, "jwks.json")
			// An existing file of looser mode is replaced, not rewritten in place.
			if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := ks.WriteFile(path); err != nil {
				t.Fatalf("WriteFile: %v", err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("key file mode = %v, want 0600", fi.Mode().Perm())
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Errorf("directory holds %d entries after WriteFile, want only the key file (no temporary left)", len(entries))
			}
			loaded, err := accesstoken.LoadKeySet(path)
			if err != nil {
				t.Fatalf("LoadKeySet: %v", err)
			}
			if loaded.SigningKeyID() != ks.SigningKeyID() {
				t.Errorf("signing kid after round trip = %s, want %s", loaded.SigningKeyID(), ks.SigningKeyID())
			}
			a, _ := ks.MarshalPrivate()
			b, _ := loaded.MarshalPrivate()
			if string(a) != string(b) {
				t.Errorf("private set changed in the round trip:\n%s\n%s", a, b)
			}
			pa, _ := ks.PublicJSON()
			pb, _ := loaded.PublicJSON()
			if string(pa) != string(pb) {
				t.Errorf("public set changed in the round trip")
			}
			// A token from the original verifies with the loaded public set.
			is, _ := accesstoken.NewIssuer(ks, issuer, audience)
			tok, _, err := is.Issue(grant(1))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := verifier(loaded.Public(), clockAt(now)).Verify(tok); err != nil {
				t.Errorf("token of the original set does not verify with the loaded one: %v", err)
			}
		})
	}
	if err := mustSet(t, mustKey(t, "")).WriteFile(filepath.Join(t.TempDir(), "missing", "jwks.json")); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
	if _, err := accesstoken.LoadKeySet(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("LoadKeySet of a missing file succeeded")
	}
}

func TestParseKeySetRejects(t *testing.T) {
	good := mustKey(t, "")
	es := mustKey(t, accesstoken.AlgES256)
	pub, err := good.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	withField := func(k jwk.Key, field string, value any) jwk.Key {
		c, err := k.Clone()
		if err != nil {
			t.Fatal(err)
		}
		if value == nil {
			if err := c.Remove(field); err != nil {
				t.Fatal(err)
			}
		} else if err := c.Set(field, value); err != nil {
			t.Fatal(err)
		}
		return c
	}
	setJSON := func(keys ...jwk.Key) string {
		s := jwk.NewSet()
		for _, k := range keys {
			if err := s.AddKey(k); err != nil {
				t.Fatal(err)
			}
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"garbage", "not json", "parse"},
		{"empty set", `{"keys":[]}`, "no key"},
		{"public key only", setJSON(pub), "not a private key"},
		{"no kid", setJSON(withField(good, jwk.KeyIDKey, nil)), "no kid"},
		{"no alg", setJSON(withField(good, jwk.AlgorithmKey, nil)), `no "alg"`},
		{"unsupported alg", setJSON(withField(good, jwk.AlgorithmKey, jwa.RS256())), "unsupported alg"},
		{"EdDSA on an EC key", setJSON(withField(es, jwk.AlgorithmKey, jwa.EdDSA())), "EdDSA needs an OKP key"},
		{"ES256 on an OKP key", setJSON(withField(good, jwk.AlgorithmKey, jwa.ES256())), "ES256 needs an EC key"},
		{"duplicate kid", setJSON(good, withField(mustKey(t, ""), jwk.KeyIDKey, kid(t, good))), "appears twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := accesstoken.ParseKeySet([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseKeySet = %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := accesstoken.NewKeySet(); err == nil {
		t.Error("NewKeySet() with no key succeeded")
	}
}

func TestPublicSet(t *testing.T) {
	ks := mustSet(t, mustKey(t, accesstoken.AlgEdDSA), mustKey(t, accesstoken.AlgES256))
	doc, err := ks.PublicJSON()
	if err != nil {
		t.Fatal(err)
	}
	var jwks struct {
		Keys []map[string]any `json:"keys"`
	}
	if err := json.Unmarshal(doc, &jwks); err != nil {
		t.Fatal(err)
	}
	if len(jwks.Keys) != 2 {
		t.Fatalf("public set has %d keys, want 2", len(jwks.Keys))
	}
	for _, k := range jwks.Keys {
		for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "k"} {
			if _, ok := k[private]; ok {
				t.Errorf("public key %v holds the private member %q", k["kid"], private)
			}
		}
		for _, need := range []string{"alg", "kid", "use", "kty"} {
			if s, _ := k[need].(string); s == "" {
				t.Errorf("public key %v has no %q", k["kid"], need)
			}
		}
		if k["use"] != "sig" {
			t.Errorf("use = %v, want sig", k["use"])
		}
	}
	if got := []string{jwks.Keys[0]["alg"].(string), jwks.Keys[1]["alg"].(string)}; !slices.Equal(got, []string{"EdDSA", "ES256"}) {
		t.Errorf("algs = %v", got)
	}
	for i := range ks.Public().Len() {
		k, _ := ks.Public().Key(i)
		if priv, _ := jwk.IsPrivateKey(k); priv {
			t.Errorf("Public() key %d is private", i)
		}
	}
	if ks.SigningKeyID() != jwks.Keys[0]["kid"] {
		t.Errorf("the signing key is not the first published key")
	}
}

func TestRotated(t *testing.T) {
	k1, k2, k3 := mustKey(t, ""), mustKey(t, ""), mustKey(t, accesstoken.AlgES256)
	ks1 := mustSet(t, k1)
	ks2, err := ks1.Rotated(k2, 1)
	if err != nil {
		t.Fatalf("Rotated: %v", err)
	}
	ks3, err := ks2.Rotated(k3, 1)
	if err != nil {
		t.Fatalf("Rotated: %v", err)
	}
	ks3all, err := ks2.Rotated(k3, 5)
	if err != nil {
		t.Fatalf("Rotated: %v", err)
	}
	kids := func(ks *accesstoken.KeySet) []string {
		var out []string
		for i := range ks.Public().Len() {
			k, _ := ks.Public().Key(i)
			out = append(out, kid(t, k))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		ks   *accesstoken.KeySet
		want []string
	}{
		{"one rotation", ks2, []string{kid(t, k2), kid(t, k1)}},
		{"keep 1 drops the oldest", ks3, []string{kid(t, k3), kid(t, k2)}},
		{"keep 5 keeps all", ks3all, []string{kid(t, k3), kid(t, k2), kid(t, k1)}},
	} {
		if got := kids(tc.ks); !slices.Equal(got, tc.want) {
			t.Errorf("%s: kids = %v, want %v", tc.name, got, tc.want)
		}
		if tc.ks.SigningKeyID() != tc.want[0] {
			t.Errorf("%s: signing kid = %s, want the new key %s", tc.name, tc.ks.SigningKeyID(), tc.want[0])
		}
	}
	if got := kids(ks1); !slices.Equal(got, []string{kid(t, k1)}) {
		t.Errorf("Rotated changed the original set: %v", got)
	}
	if _, err := ks1.Rotated(k1, 1); err == nil {
		t.Error("rotating to a key already in the set succeeded (duplicate kid)")
	}
}
