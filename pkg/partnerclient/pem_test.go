package partnerclient

import (
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"
)

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// TestParsePrivateKeyPEM: PKCS #8, SEC 1 and PKCS #1 keys of every
// accepted type load with their default algorithm and sign assertions the
// key's public half verifies; what the service refuses, or what is no
// private key, is refused without quoting the key.
func TestParsePrivateKeyPEM(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	pkcs8 := func(k any) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf("PRIVATE KEY", der)
	}
	sec1 := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pemOf("EC PRIVATE KEY", der)
	}
	// openssl ecparam -genkey writes the curve's parameters before the key.
	params := pemOf("EC PARAMETERS", []byte{0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07})
	for _, c := range []struct {
		name string
		data []byte
		key  crypto.Signer
		alg  string
	}{
		{"PKCS #8 P-256 (openssl genpkey)", pkcs8(p256), p256, ES256},
		{"PKCS #8 P-384", pkcs8(p384), p384, ES384},
		{"PKCS #8 RSA", pkcs8(rsaKey), rsaKey, RS256},
		{"PKCS #8 Ed25519", pkcs8(edKey), edKey, EdDSA},
		{"SEC 1 P-256 (openssl ecparam -genkey)", append(params, sec1(p256)...), p256, ES256},
		{"SEC 1 P-384", sec1(p384), p384, ES384},
		{"PKCS #1 RSA", pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey)), rsaKey, RS256},
		{"with text around", append([]byte("a comment\n"), append(pkcs8(p256), "\ntrailer\n"...)...), p256, ES256},
	} {
		k, err := ParsePrivateKeyPEM(c.data)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if k.Algorithm != c.alg || k.KeyID != "" || !k.Key.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(c.key.Public()) {
			t.Errorf("%s: %v, want %s and the key", c.name, k, c.alg)
		}
		a, err := newAssertion(k.Key, k.Algorithm, "kid-1", "svc_x", "https://auth.example.test/api/v1/oauth/token/", time.Now(), rand.Reader)
		if err != nil {
			t.Fatalf("%s: sign: %v", c.name, err)
		}
		verifiedJWS(t, a, c.key.Public(), c.alg)
	}

	p224, _ := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	x25519, _ := ecdh.X25519().GenerateKey(rand.Reader)
	pubDER, _ := x509.MarshalPKIXPublicKey(p256.Public())
	encrypted := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-128-CBC,00"}, Bytes: []byte{1}})
	secret := pkcs8(p256)
	broken := append([]byte(nil), secret...)
	broken[40] ^= 0x55
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"empty":             {nil, "no PEM private key"},
		"a JWK":             {[]byte(`{"kty":"EC"}`), "no PEM private key"},
		"parameters only":   {params, "no PEM private key"},
		"public key":        {pemOf("PUBLIC KEY", pubDER), "a PEM PUBLIC KEY, not a private key"},
		"encrypted":         {encrypted, "encrypted"},
		"PKCS #8 encrypted": {pemOf("ENCRYPTED PRIVATE KEY", []byte{1}), "encrypted"},
		"P-224":             {sec1(p224), "P-224"},
		"RSA 1024":          {pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(small)), "1024 bits"},
		"X25519":            {pkcs8(x25519), "cannot sign"},
		"garbled":           {pemOf("PRIVATE KEY", []byte("not DER")), "PEM PRIVATE KEY"},
		"tampered":          {broken, ""},
	} {
		_, err := ParsePrivateKeyPEM(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, c.want)
			continue
		}
		if strings.Contains(err.Error(), string(c.data)) && len(c.data) > 0 || strings.Contains(fmt.Sprint(err), "MIG") {
			t.Errorf("%s: the error quotes the key: %v", name, err)
		}
	}
}
