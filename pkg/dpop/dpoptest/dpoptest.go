// Package dpoptest makes DPoP proofs (RFC 9449 section 4.2) for the tests
// of the servers that verify them and for the load harness: an Ed25519
// key, its RFC 7638 thumbprint (the cnf.jkt of a token bound to it), and a
// fresh proof per request. Not for production clients: those use
// pkg/partnerclient (Config.DPoPKey).
package dpoptest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"time"
)

// Key is an Ed25519 DPoP key. It is safe for concurrent use.
type Key struct {
	priv   ed25519.PrivateKey
	x      string
	header string // the proof's JOSE header, base64url
}

// NewKey returns a fresh key.
func NewKey() *Key {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	k := &Key{priv: priv, x: b64(pub)}
	h, _ := json.Marshal(map[string]any{"typ": "dpop+jwt", "alg": "EdDSA",
		"jwk": map[string]string{"kty": "OKP", "crv": "Ed25519", "x": k.x}})
	k.header = b64(h)
	return k
}

// JKT is the key's JWK SHA-256 thumbprint (RFC 7638 section 3: the
// required members in lexicographic order, no whitespace).
func (k *Key) JKT() string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + k.x + `"}`))
	return b64(sum[:])
}

// Proof is what a proof says; zero members are left out (IssuedAt zero:
// time.Now; JTI empty: a random one).
type Proof struct {
	Method, URI string
	// AccessToken, when not empty, gives the proof its ath.
	AccessToken string
	Nonce       string
	IssuedAt    time.Time
	JTI         string
}

// Sign returns the proof p signed by k.
func (k *Key) Sign(p Proof) string {
	if p.JTI == "" {
		var jti [16]byte
		_, _ = rand.Read(jti[:])
		p.JTI = b64(jti[:])
	}
	if p.IssuedAt.IsZero() {
		p.IssuedAt = time.Now()
	}
	c := map[string]any{"jti": p.JTI, "htm": p.Method, "htu": p.URI, "iat": p.IssuedAt.Unix()}
	if p.AccessToken != "" {
		sum := sha256.Sum256([]byte(p.AccessToken))
		c["ath"] = b64(sum[:])
	}
	if p.Nonce != "" {
		c["nonce"] = p.Nonce
	}
	body, _ := json.Marshal(c)
	input := k.header + "." + b64(body)
	return input + "." + b64(ed25519.Sign(k.priv, []byte(input)))
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
