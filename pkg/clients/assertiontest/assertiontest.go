// Package assertiontest makes partner key pairs and signs client
// assertions with them (private_key_jwt, RFC 7523 section 3), for tests of
// the token service, the admin API and the documentation: the one place
// tests build what a partner's software sends.
package assertiontest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
)

// Key is a partner's key pair: Signer signs assertions, its public half is
// registered (JWKS).
type Key struct {
	KID    string
	Alg    jwa.SignatureAlgorithm
	Signer crypto.Signer
}

// NewKey makes a key pair for alg: EC P-256 or P-384, RSA 2048, Ed25519
// (EdDSA, or its fully specified name Ed25519 of RFC 9864).
func NewKey(t testing.TB, kid string, alg jwa.SignatureAlgorithm) Key {
	t.Helper()
	var priv crypto.Signer
	var err error
	switch alg {
	case jwa.ES256():
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jwa.ES384():
		priv, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case jwa.RS256(), jwa.RS384(), jwa.PS256():
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case jwa.EdDSA(), jwa.EdDSAEd25519():
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil || priv == nil {
		t.Fatalf("assertiontest: key %s: %v", alg, err)
	}
	return Key{KID: kid, Alg: alg, Signer: priv}
}

// PublicJWK is the key's public JWK, with its kid.
func (k Key) PublicJWK(t testing.TB) jwk.Key {
	t.Helper()
	pub, err := jwk.Import(k.Signer.Public())
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Set(jwk.KeyIDKey, k.KID); err != nil {
		t.Fatal(err)
	}
	return pub
}

// JWKS is the public JWK set of keys, as a partner registers it.
func JWKS(t testing.TB, keys ...Key) []byte {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		if err := set.AddKey(k.PublicJWK(t)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Claims are a good assertion's claims for client id and audience aud at
// now: iss = sub = id, exp a minute ahead, a fresh random jti.
func Claims(id, aud string, now time.Time) map[string]any {
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	return map[string]any{"iss": id, "sub": id, "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti)}
}

// Sign signs claims with k: a compact JWS whose header has k's alg and kid
// and typ JWT.
func (k Key) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	h := jws.NewHeaders()
	_ = h.Set(jws.KeyIDKey, k.KID)
	_ = h.Set(jws.TypeKey, "JWT")
	b, err := jws.Sign(payload, jws.WithKey(k.Alg, k.Signer, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Assertion is a good assertion of client id for audience aud, now.
func (k Key) Assertion(t testing.TB, id, aud string) string {
	t.Helper()
	return k.Sign(t, Claims(id, aud, time.Now()))
}
