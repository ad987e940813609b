package partnerclient

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
)

// PrivateJWK is a private key read from a JSON Web Key: what Config needs
// for private_key_jwt client authentication. It prints and logs without
// the key.
type PrivateJWK struct {
	// Key is the private key: *ecdsa.PrivateKey, *rsa.PrivateKey or
	// ed25519.PrivateKey.
	Key crypto.Signer
	// KeyID is the JWK's "kid" (RFC 7517 section 4.5), empty if it has
	// none.
	KeyID string
	// Algorithm is the JWK's "alg" (RFC 7517 section 4.4), or when it has
	// none the default of its key type: ES256 or ES384 by curve, RS256,
	// EdDSA.
	Algorithm string
}

// String describes the key without its private part.
func (k *PrivateJWK) String() string {
	return fmt.Sprintf("partnerclient.PrivateJWK{KeyID: %q, Algorithm: %q, Key: (redacted)}", k.KeyID, k.Algorithm)
}

// GoString is String, for %#v.
func (k *PrivateJWK) GoString() string { return k.String() }

// jwkJSON holds the members of a private JWK the SDK reads: RFC 7517
// section 4 and RFC 7518 section 6 (EC, RSA), RFC 8037 section 2 (OKP).
type jwkJSON struct {
	Kty    string   `json:"kty"`
	Kid    string   `json:"kid"`
	Alg    string   `json:"alg"`
	Use    string   `json:"use"`
	KeyOps []string `json:"key_ops"`
	Crv    string   `json:"crv"`
	X      string   `json:"x"`
	Y      string   `json:"y"`
	D      string   `json:"d"`
	N      string   `json:"n"`
	E      string   `json:"e"`
	P      string   `json:"p"`
	Q      string   `json:"q"`
	Oth    []any    `json:"oth"`
}

// ParsePrivateJWK reads a private JSON Web Key (RFC 7517): an EC key on
// P-256 or P-384 (RFC 7518 section 6.2), an RSA key of 2048 bits or more
// with its primes (section 6.3) or an OKP Ed25519 key (RFC 8037 section 2).
// The key must be usable for signing ("use" absent or "sig", "key_ops"
// absent or holding "sign"), and its "alg", if any, one of ES256, ES384,
// RS256, RS384, PS256, EdDSA or Ed25519 fitting the key. Errors never quote the
// key's members.
//
//	jwk, err := partnerclient.ParsePrivateJWK(data)
//	cfg.PrivateKey, cfg.KeyID, cfg.Algorithm = jwk.Key, jwk.KeyID, jwk.Algorithm
func ParsePrivateJWK(data []byte) (*PrivateJWK, error) {
	var j jwkJSON
	if err := json.Unmarshal(data, &j); err != nil {
		// A json.SyntaxError names an offset, never the text.
		return nil, fmt.Errorf("partnerclient: the JWK is not a JSON object: %w", err)
	}
	if j.Use != "" && j.Use != "sig" {
		return nil, fmt.Errorf("partnerclient: the JWK's use is %q, not \"sig\"", j.Use)
	}
	if j.KeyOps != nil && !slices.Contains(j.KeyOps, "sign") {
		return nil, errors.New("partnerclient: the JWK's key_ops do not include \"sign\"")
	}
	if j.D == "" {
		return nil, errors.New("partnerclient: the JWK has no private part (\"d\"): a public key cannot sign")
	}
	var key crypto.Signer
	var err error
	switch j.Kty {
	case "EC":
		key, err = ecJWK(&j)
	case "RSA":
		key, err = rsaJWK(&j)
	case "OKP":
		key, err = okpJWK(&j)
	default:
		return nil, fmt.Errorf("partnerclient: unsupported JWK kty %q (EC, RSA or OKP)", j.Kty)
	}
	if err != nil {
		return nil, err
	}
	alg := j.Alg
	if alg == "" {
		alg = defaultAlgorithm(key.Public())
	}
	if err := checkAlgorithm(alg, key.Public()); err != nil {
		return nil, err
	}
	return &PrivateJWK{Key: key, KeyID: j.Kid, Algorithm: alg}, nil
}

// b64 decodes a base64url member without padding (RFC 7515 section 2),
// of exactly size bytes unless size is 0.
func b64(name, s string, size int) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, fmt.Errorf("partnerclient: the JWK's %q is missing or not base64url", name)
	}
	if size != 0 && len(b) != size {
		return nil, fmt.Errorf("partnerclient: the JWK's %q is %d bytes, want %d", name, len(b), size)
	}
	return b, nil
}

// ecJWK reads an EC private key (RFC 7518 section 6.2). The coordinates and
// d are of the curve's full length (sections 6.2.1.2 and 6.2.2.1). The key
// is built through crypto/ecdh, which checks d and derives the public
// point, compared with x and y.
func ecJWK(j *jwkJSON) (crypto.Signer, error) {
	var curve ecdh.Curve
	var size int
	switch j.Crv {
	case "P-256":
		curve, size = ecdh.P256(), 32
	case "P-384":
		curve, size = ecdh.P384(), 48
	default:
		return nil, fmt.Errorf("partnerclient: unsupported EC curve %q (P-256 or P-384)", j.Crv)
	}
	x, err := b64("x", j.X, size)
	if err != nil {
		return nil, err
	}
	y, err := b64("y", j.Y, size)
	if err != nil {
		return nil, err
	}
	d, err := b64("d", j.D, size)
	if err != nil {
		return nil, err
	}
	priv, err := curve.NewPrivateKey(d)
	if err != nil {
		return nil, errors.New("partnerclient: the JWK's \"d\" is not a valid private key on its curve")
	}
	// The uncompressed point (SEC 1 section 2.3.3): 0x04 || x || y.
	if !bytes.Equal(priv.PublicKey().Bytes(), slices.Concat([]byte{4}, x, y)) {
		return nil, errors.New("partnerclient: the JWK's \"x\" and \"y\" are not the public key of its \"d\"")
	}
	// PKCS #8 turns the ecdh key into an *ecdsa.PrivateKey without setting
	// its big.Int fields by hand.
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("partnerclient: encoding the EC key: %w", err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("partnerclient: decoding the EC key: %w", err)
	}
	key, ok := parsed.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("partnerclient: the EC key decoded as %T", parsed)
	}
	return key, nil
}

// rsaJWK reads an RSA private key (RFC 7518 section 6.3) with its two
// primes p and q; the CRT members dp, dq and qi are recomputed. A key of
// more than two primes ("oth") is refused.
func rsaJWK(j *jwkJSON) (crypto.Signer, error) {
	if len(j.Oth) > 0 {
		return nil, errors.New("partnerclient: multi-prime RSA JWKs (\"oth\") are not supported")
	}
	ints := map[string]*big.Int{}
	for _, m := range []struct{ name, val string }{{"n", j.N}, {"e", j.E}, {"d", j.D}, {"p", j.P}, {"q", j.Q}} {
		b, err := b64(m.name, m.val, 0)
		if err != nil {
			return nil, err
		}
		ints[m.name] = new(big.Int).SetBytes(b)
	}
	e := ints["e"]
	if !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
		return nil, errors.New("partnerclient: the JWK's RSA exponent \"e\" is out of range")
	}
	key := &rsa.PrivateKey{
		PublicKey: rsa.PublicKey{N: ints["n"], E: int(e.Int64())},
		D:         ints["d"],
		Primes:    []*big.Int{ints["p"], ints["q"]},
	}
	if key.N.BitLen() < minRSABits {
		return nil, fmt.Errorf("partnerclient: an RSA key of %d bits: at least %d are required (RFC 7518 section 3.3)", key.N.BitLen(), minRSABits)
	}
	if err := key.Validate(); err != nil {
		return nil, errors.New("partnerclient: the JWK's RSA members do not form a valid key")
	}
	key.Precompute()
	return key, nil
}

// okpJWK reads an Ed25519 private key (RFC 8037 section 2): d is the
// 32-byte seed, x the public key it derives.
func okpJWK(j *jwkJSON) (crypto.Signer, error) {
	if j.Crv != "Ed25519" {
		return nil, fmt.Errorf("partnerclient: unsupported OKP curve %q (Ed25519)", j.Crv)
	}
	x, err := b64("x", j.X, ed25519.PublicKeySize)
	if err != nil {
		return nil, err
	}
	d, err := b64("d", j.D, ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	key := ed25519.NewKeyFromSeed(d)
	if !bytes.Equal(key.Public().(ed25519.PublicKey), x) {
		return nil, errors.New("partnerclient: the JWK's \"x\" is not the public key of its \"d\"")
	}
	return key, nil
}
