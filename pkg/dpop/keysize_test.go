package dpop_test

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"testing"

	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/keysize"
)

// TestVerifyEd25519Name (RFC 9864 section 2.2): a proof signed under
// "Ed25519", EdDSA's fully specified name, verifies with an OKP Ed25519
// jwk, as one under "EdDSA" does, with the same thumbprint; its jwk must
// be Ed25519.
func TestVerifyEd25519Name(t *testing.T) {
	ed := keyFor(t, "EdDSA")
	var jkts []string
	for _, alg := range []string{"EdDSA", "Ed25519"} {
		p, err := dpop.Verify(dpop.Input{Headers: []string{rawProof(t, ed.priv, alg, header(alg, ed.pub), mustJSON(t, goodClaims()))},
			Method: testMethod, URI: testURI, Now: now})
		if err != nil || p.Algorithm != alg {
			t.Fatalf("%s: %+v, %v", alg, p, err)
		}
		jkts = append(jkts, p.JKT)
	}
	if jkts[0] != jkts[1] {
		t.Errorf("thumbprints %q and %q of one key", jkts[0], jkts[1])
	}
	es := keyFor(t, "ES256")
	_, err := dpop.Verify(dpop.Input{Headers: []string{rawProof(t, ed.priv, "Ed25519", header("Ed25519", es.pub), mustJSON(t, goodClaims()))},
		Method: testMethod, URI: testURI, Now: now})
	var de *dpop.Error
	if !errors.As(err, &de) || de.Description != "the DPoP proof's jwk is malformed or does not fit its alg" {
		t.Errorf("Ed25519 with an EC jwk: %v", err)
	}
}

// TestVerifyRSASizes (issue 59, hole 6): an RSA jwk of 2048 to 4096 bits
// (package keysize) verifies; a larger one is refused before any signature
// check, whatever its signature: as a jwk that does not fit, or, once its
// header is over MaxHeaderLength (a proof of 8 KiB holds a jwk of about
// 16,000 bits), as too long before the header is decoded.
func TestVerifyRSASizes(t *testing.T) {
	k4096, err := rsa.GenerateKey(rand.Reader, keysize.MaxRSABits)
	if err != nil {
		t.Fatal(err)
	}
	pub := rsaJWK(k4096)
	if _, err := dpop.Verify(dpop.Input{Headers: []string{rawProof(t, k4096, "RS256", header("RS256", pub), mustJSON(t, goodClaims()))},
		Method: testMethod, URI: testURI, Now: now}); err != nil {
		t.Fatalf("RSA-4096: %v", err)
	}
	for _, bits := range []int{keysize.MaxRSABits + 8, 8192, 16384} {
		n := make([]byte, bits/8)
		_, _ = rand.Read(n)
		n[0] |= 0x80
		n[len(n)-1] |= 1
		sig := make([]byte, bits/8)
		_, _ = rand.Read(sig)
		sig[0] = 0
		jwkJSON := json.RawMessage(`{"kty":"RSA","n":"` + b64(string(n)) + `","e":"AQAB"}`)
		proof := b64(header("RS256", jwkJSON)) + "." + b64(mustJSON(t, goodClaims())) + "." + b64(string(sig))
		if len(proof) > dpop.MaxProofLength {
			t.Fatalf("%d bits: a proof of %d bytes", bits, len(proof))
		}
		_, err := dpop.Verify(dpop.Input{Headers: []string{proof}, Method: testMethod, URI: testURI, Now: now})
		want := "the DPoP proof's jwk is malformed or does not fit its alg"
		if bits > 8192 {
			want = "the DPoP proof is too long"
		}
		var de *dpop.Error
		if !errors.As(err, &de) || de.Description != want {
			t.Errorf("RSA-%d: %v, want %q", bits, err, want)
		}
	}
}
