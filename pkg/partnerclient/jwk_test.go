package partnerclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"
)

// privateJWK encodes key as a private JWK (RFC 7518 section 6, RFC 8037
// section 2) with the extra members given, by hand.
func privateJWK(t *testing.T, key crypto.Signer, extra map[string]any) map[string]any {
	t.Helper()
	enc := base64.RawURLEncoding.EncodeToString
	var m map[string]any
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		size := (k.Curve.Params().BitSize + 7) / 8
		pub, err := k.PublicKey.ECDH() // the uncompressed point, without the big.Int fields
		if err != nil {
			t.Fatal(err)
		}
		point := pub.Bytes()[1:]
		priv, err := k.ECDH()
		if err != nil {
			t.Fatal(err)
		}
		m = map[string]any{"kty": "EC", "crv": k.Curve.Params().Name, "x": enc(point[:size]), "y": enc(point[size:]), "d": enc(priv.Bytes())}
	case *rsa.PrivateKey:
		m = map[string]any{"kty": "RSA", "n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes()), "d": enc(k.D.Bytes()),
			"p": enc(k.Primes[0].Bytes()), "q": enc(k.Primes[1].Bytes()),
			"dp": enc(k.Precomputed.Dp.Bytes()), "dq": enc(k.Precomputed.Dq.Bytes()), "qi": enc(k.Precomputed.Qinv.Bytes())}
	case ed25519.PrivateKey:
		m = map[string]any{"kty": "OKP", "crv": "Ed25519", "x": enc(k.Public().(ed25519.PublicKey)), "d": enc(k.Seed())}
	default:
		t.Fatalf("key %T", key)
	}
	for k, v := range extra {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

func jwkBytes(t *testing.T, m map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParsePrivateJWK(t *testing.T) {
	keys := testKeys()
	for _, c := range []struct {
		name, key, alg, want string
	}{
		{"EC P-256", ES256, "", ES256},
		{"EC P-384", ES384, "", ES384},
		{"RSA", RS256, "", RS256},
		{"RSA RS384", RS256, RS384, RS384},
		{"RSA PS256", RS256, PS256, PS256},
		{"OKP Ed25519", EdDSA, "", EdDSA},
		{"EC with alg", ES256, ES256, ES256},
	} {
		t.Run(c.name, func(t *testing.T) {
			extra := map[string]any{"kid": "kid-" + c.key, "use": "sig", "key_ops": []string{"sign"}}
			if c.alg != "" {
				extra["alg"] = c.alg
			}
			jwk, err := ParsePrivateJWK(jwkBytes(t, privateJWK(t, keys[c.key], extra)))
			if err != nil {
				t.Fatal(err)
			}
			if jwk.KeyID != "kid-"+c.key || jwk.Algorithm != c.want {
				t.Errorf("kid %q alg %q, want %q %q", jwk.KeyID, jwk.Algorithm, "kid-"+c.key, c.want)
			}
			type equaler interface{ Equal(crypto.PrivateKey) bool }
			if !jwk.Key.(equaler).Equal(keys[c.key]) {
				t.Errorf("the parsed key is not the original")
			}
			// Signed with the parsed key, verified with the original's public key.
			a, err := newAssertion(jwk.Key, jwk.Algorithm, jwk.KeyID, "svc_c", "https://x.test/", time.Now(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			verifiedJWS(t, a, keys[c.key].Public(), jwk.Algorithm)
		})
	}
}

func TestParsePrivateJWKErrors(t *testing.T) {
	keys := testKeys()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	otherEC, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other := privateJWK(t, otherEC, nil)
	otherEd, _, _ := ed25519.GenerateKey(rand.Reader)
	for _, c := range []struct {
		name  string
		key   crypto.Signer
		extra map[string]any
		want  string
	}{
		{"public only", keys[ES256], map[string]any{"d": nil}, `no private part`},
		{"encryption key", keys[ES256], map[string]any{"use": "enc"}, `use is "enc"`},
		{"verify only", keys[EdDSA], map[string]any{"key_ops": []string{"verify"}}, `key_ops`},
		{"symmetric", keys[ES256], map[string]any{"kty": "oct"}, `kty "oct"`},
		{"P-521", keys[ES256], map[string]any{"crv": "P-521"}, `curve "P-521"`},
		{"secp256k1", keys[ES256], map[string]any{"crv": "secp256k1"}, `curve`},
		{"X25519", keys[EdDSA], map[string]any{"crv": "X25519"}, `OKP curve "X25519"`},
		{"short d", keys[ES256], map[string]any{"d": "AQAB"}, `"d" is 3 bytes, want 32`},
		{"x of another key", keys[ES384], map[string]any{"x": other["x"]}, `not the public key`},
		{"Ed25519 x of another key", keys[EdDSA], map[string]any{"x": base64.RawURLEncoding.EncodeToString(otherEd)}, `not the public key`},
		{"padded base64", keys[EdDSA], map[string]any{"d": base64.URLEncoding.EncodeToString(make([]byte, 32))}, `not base64url`},
		{"alg of another key type", keys[ES256], map[string]any{"alg": RS256}, `does not fit an ECDSA key`},
		{"alg of another curve", keys[ES256], map[string]any{"alg": ES384}, `does not fit`},
		{"unsupported alg", keys[RS256], map[string]any{"alg": "RS512"}, `does not fit an RSA key`},
		{"RSA without primes", keys[RS256], map[string]any{"p": nil, "q": nil}, `"p" is missing`},
		{"RSA wrong prime", keys[RS256], map[string]any{"q": base64.RawURLEncoding.EncodeToString(big.NewInt(65537).Bytes())}, `not form a valid key`},
		{"RSA multi-prime", keys[RS256], map[string]any{"oth": []any{map[string]any{"r": "AQ"}}}, `multi-prime`},
		{"RSA 1024 bits", small, nil, `1024 bits`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := privateJWK(t, c.key, c.extra)
			_, err := ParsePrivateJWK(jwkBytes(t, m))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if d, _ := m["d"].(string); d != "" && strings.Contains(err.Error(), d) {
				t.Errorf("the error quotes the private key: %v", err)
			}
		})
	}
	if _, err := ParsePrivateJWK([]byte(`{"kty":"EC", "d": "secret`)); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("malformed JSON: %v", err)
	}
}

func TestPrivateJWKPrints(t *testing.T) {
	m := privateJWK(t, testKeys()[EdDSA], map[string]any{"kid": "k1"})
	jwk, err := ParsePrivateJWK(jwkBytes(t, m))
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, jwk)
		if want := `partnerclient.PrivateJWK{KeyID: "k1", Algorithm: "EdDSA", Key: (redacted)}`; out != want {
			t.Errorf("%s: %s, want %s", verb, out, want)
		}
	}
}
