package dpop_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// now is the fixed clock of the tests.
var now = time.Unix(1_800_000_000, 0)

const (
	testMethod = "POST"
	testURI    = "https://auth.example.com/api/v1/oauth/token/"
)

// testKey is a key pair of one algorithm: the private key signs, pub is
// its public JWK as JSON.
type testKey struct {
	alg  string
	priv crypto.Signer
	pub  json.RawMessage
}

var (
	keysOnce sync.Once
	keys     map[string]*testKey // by alg; read-only once made
)

// keyFor returns the test key of alg (ES256, ES384, RS256, PS256, EdDSA,
// Ed25519: the same key as EdDSA),
// made once per test binary: RSA key generation is slow.
func keyFor(t testing.TB, alg string) *testKey {
	t.Helper()
	keysOnce.Do(func() {
		keys = map[string]*testKey{}
		p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
		r, _ := rsa.GenerateKey(rand.Reader, 2048)
		_, ed, _ := ed25519.GenerateKey(rand.Reader)
		for a, k := range map[string]crypto.Signer{"ES256": p256, "ES384": p384, "RS256": r, "PS256": r, "EdDSA": ed, "Ed25519": ed} {
			keys[a] = &testKey{alg: a, priv: k, pub: publicJWK(k.Public())}
		}
	})
	k := keys[alg]
	if k == nil {
		t.Fatalf("no test key for %s", alg)
	}
	return k
}

// publicJWK is the public JWK of pub as JSON, by jwx.
func publicJWK(pub crypto.PublicKey) json.RawMessage {
	k, err := jwk.Import(pub)
	if err != nil {
		panic(err)
	}
	b, err := json.Marshal(k)
	if err != nil {
		panic(err)
	}
	return b
}

// claims of a good proof for testMethod and testURI at now.
func goodClaims() map[string]any {
	return map[string]any{"jti": "3Xm_4e1c2b9a-test", "htm": testMethod, "htu": testURI, "iat": now.Unix()}
}

// jwxProof signs claims with k through jws.Sign: the proof a JOSE library
// makes, typ dpop+jwt and the public jwk in the protected header.
func jwxProof(t testing.TB, k *testKey, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := jwk.ParseKey(k.pub)
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
	alg, ok := jwa.LookupSignatureAlgorithm(k.alg)
	if !ok {
		t.Fatalf("alg %s", k.alg)
	}
	out, err := jws.Sign(payload, jws.WithKey(alg, k.priv, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// rawProof signs the header and claims given as JSON text with key under
// alg, whatever they hold: the proofs a test crafts.
func rawProof(t testing.TB, key crypto.Signer, alg, header, claims string) string {
	t.Helper()
	input := b64(header) + "." + b64(claims)
	sig, err := jwsbb.Sign(key, alg, []byte(input), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// header is a proof header JSON for alg with jwk.
func header(alg string, jwkJSON json.RawMessage) string {
	return `{"typ":"dpop+jwt","alg":"` + alg + `","jwk":` + string(jwkJSON) + `}`
}

// staticNonces accepts one nonce.
type staticNonces string

func (s staticNonces) Valid(nonce string, _ time.Time) bool { return nonce == string(s) }
