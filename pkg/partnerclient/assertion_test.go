package partnerclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKeys are one private key per algorithm, generated once: RSA
// generation is slow under the race detector.
var testKeys = sync.OnceValue(func() map[string]crypto.Signer {
	must := func(k crypto.Signer, err error) crypto.Signer {
		if err != nil {
			panic(err)
		}
		return k
	}
	rsaKey := must(rsa.GenerateKey(rand.Reader, 2048))
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return map[string]crypto.Signer{
		ES256:   must(ecdsa.GenerateKey(elliptic.P256(), rand.Reader)),
		ES384:   must(ecdsa.GenerateKey(elliptic.P384(), rand.Reader)),
		RS256:   rsaKey,
		RS384:   rsaKey,
		PS256:   rsaKey,
		EdDSA:   edKey,
		Ed25519: edKey,
	}
})

// verifiedJWS checks a compact JWS's signature by hand, with the standard
// library's verification functions, and returns its decoded header and
// claims.
func verifiedJWS(t *testing.T, compact string, pub crypto.PublicKey, alg string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(compact, ".")
	if len(parts) != 3 {
		t.Fatalf("%s: %d parts, want 3", alg, len(parts))
	}
	dec := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("%s: not unpadded base64url: %q: %v", alg, s, err)
		}
		return b
	}
	if err := json.Unmarshal(dec(parts[0]), &header); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(dec(parts[1]), &claims); err != nil {
		t.Fatal(err)
	}
	input, sig := []byte(parts[0]+"."+parts[1]), dec(parts[2])
	digest := func(h crypto.Hash) []byte {
		w := h.New()
		w.Write(input)
		return w.Sum(nil)
	}
	ok := false
	switch alg {
	case ES256, ES384:
		size, h := 32, crypto.SHA256
		if alg == ES384 {
			size, h = 48, crypto.SHA384
		}
		// RFC 7518 section 3.4: R || S, each of the curve's size.
		if len(sig) != 2*size {
			t.Fatalf("%s: signature of %d bytes, want %d", alg, len(sig), 2*size)
		}
		r, s := new(big.Int).SetBytes(sig[:size]), new(big.Int).SetBytes(sig[size:])
		ok = ecdsa.Verify(pub.(*ecdsa.PublicKey), digest(h), r, s)
	case RS256:
		ok = rsa.VerifyPKCS1v15(pub.(*rsa.PublicKey), crypto.SHA256, digest(crypto.SHA256), sig) == nil
	case RS384:
		ok = rsa.VerifyPKCS1v15(pub.(*rsa.PublicKey), crypto.SHA384, digest(crypto.SHA384), sig) == nil
	case PS256:
		// RFC 7518 section 3.5: the salt is as long as the hash, 32 bytes.
		ok = rsa.VerifyPSS(pub.(*rsa.PublicKey), crypto.SHA256, digest(crypto.SHA256), sig, &rsa.PSSOptions{SaltLength: 32}) == nil
	case EdDSA, Ed25519:
		ok = ed25519.Verify(pub.(ed25519.PublicKey), input, sig)
	default:
		t.Fatalf("unknown alg %q", alg)
	}
	if !ok {
		t.Fatalf("%s: the signature does not verify", alg)
	}
	return header, claims
}

func TestAssertionSignatures(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, alg := range []string{ES256, ES384, RS256, RS384, PS256, EdDSA, Ed25519} {
		t.Run(alg, func(t *testing.T) {
			key := testKeys()[alg]
			jtis := map[string]bool{}
			for range 3 {
				a, err := newAssertion(key, alg, "key-1", "svc_client", "https://api.example.com/api/v1/oauth/token/", now, rand.Reader)
				if err != nil {
					t.Fatal(err)
				}
				header, claims := verifiedJWS(t, a, key.Public(), alg)
				if want := map[string]any{"alg": alg, "kid": "key-1", "typ": "JWT"}; !reflect.DeepEqual(header, want) {
					t.Errorf("header %v, want %v", header, want)
				}
				jti, _ := claims["jti"].(string)
				raw, err := base64.RawURLEncoding.DecodeString(jti)
				if err != nil || len(raw) != 16 {
					t.Errorf("jti %q: want 128 bits in unpadded base64url", jti)
				}
				if jtis[jti] {
					t.Errorf("jti %q repeated", jti)
				}
				jtis[jti] = true
				want := map[string]any{
					"iss": "svc_client", "sub": "svc_client", "aud": "https://api.example.com/api/v1/oauth/token/",
					"iat": float64(now.Unix()), "exp": float64(now.Unix() + 60), "jti": jti,
				}
				if !reflect.DeepEqual(claims, want) {
					t.Errorf("claims %v, want %v", claims, want)
				}
			}
		})
	}
}

// opaqueSigner hides the key's type, as an HSM or KMS signer does: only
// crypto.Signer's methods are reachable.
type opaqueSigner struct{ s crypto.Signer }

func (o opaqueSigner) Public() crypto.PublicKey { return o.s.Public() }
func (o opaqueSigner) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return o.s.Sign(r, digest, opts)
}

func TestAssertionWithAnySigner(t *testing.T) {
	for _, alg := range []string{ES384, PS256, EdDSA} {
		key := opaqueSigner{testKeys()[alg]}
		a, err := newAssertion(key, alg, "k", "svc_c", "https://x.test/", time.Now(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		verifiedJWS(t, a, key.Public(), alg)
	}
}

func TestJOSEECDSA(t *testing.T) {
	der, _ := asn1.Marshal(struct{ R, S *big.Int }{big.NewInt(1), big.NewInt(0x0203)})
	got, err := joseECDSA(der, 32)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, 64)
	want[31], want[62], want[63] = 1, 2, 3
	if string(got) != string(want) {
		t.Errorf("joseECDSA = %x, want %x (each integer left-padded to 32 bytes)", got, want)
	}
	tooLong, _ := asn1.Marshal(struct{ R, S *big.Int }{new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)})
	for _, bad := range [][]byte{nil, []byte("not DER"), append(der, 0), tooLong} {
		if _, err := joseECDSA(bad, 32); err == nil {
			t.Errorf("joseECDSA(%x) succeeded", bad)
		}
	}
}

func TestCheckAlgorithm(t *testing.T) {
	keys := testKeys()
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		alg string
		key crypto.Signer
		ok  bool
	}{
		{ES256, keys[ES256], true}, {ES384, keys[ES384], true}, {ES384, keys[ES256], false}, {ES256, keys[ES384], false},
		{RS256, keys[RS256], true}, {RS384, keys[RS256], true}, {PS256, keys[RS256], true}, {"PS384", keys[RS256], false},
		{RS256, small, false}, {EdDSA, keys[EdDSA], true}, {ES256, keys[EdDSA], false}, {EdDSA, keys[ES256], false},
		{"none", keys[ES256], false}, {"HS256", keys[RS256], false},
		{Ed25519, keys[EdDSA], true}, {Ed25519, keys[ES256], false},
	} {
		if err := checkAlgorithm(c.alg, c.key.Public()); (err == nil) != c.ok {
			t.Errorf("checkAlgorithm(%s, %T): %v, want ok %v", c.alg, c.key, err, c.ok)
		}
	}
	// RSA moduli at the servers' bounds and past them (public keys only:
	// the check reads the modulus's length).
	for _, c := range []struct {
		bits int
		ok   bool
	}{{2047, false}, {2048, true}, {4096, true}, {4097, false}, {16384, false}} {
		n := new(big.Int).Lsh(big.NewInt(1), uint(c.bits-1))
		n.SetBit(n, 0, 1)
		err := checkAlgorithm(RS256, &rsa.PublicKey{N: n, E: 65537})
		if (err == nil) != c.ok {
			t.Errorf("checkAlgorithm(RS256, an RSA key of %d bits): %v, want ok %v", c.bits, err, c.ok)
		}
		if c.bits == 4097 && (err == nil || err.Error() != "partnerclient: an RSA key of 4097 bits: the servers verify at most 4096") {
			t.Errorf("checkAlgorithm(RS256, 4097 bits) = %v", err)
		}
	}
	for alg, want := range map[string]string{ES256: ES256, ES384: ES384, RS256: RS256, EdDSA: EdDSA} {
		if got := defaultAlgorithm(testKeys()[alg].Public()); got != want {
			t.Errorf("defaultAlgorithm(%s key) = %q", alg, got)
		}
	}
}
