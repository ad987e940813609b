package partnerclient

// The client assertion is a JWS (RFC 7515) signed here with the standard
// library only: the SDK requires nothing besides golang.org/x/oauth2 and
// golang.org/x/sync, so that partners pull in no JOSE library of ours.

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
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"
)

// JWS algorithms (RFC 7518 section 3.1, RFC 8037 section 3.1) the SDK signs
// client assertions with.
const (
	ES256 = "ES256" // ECDSA P-256 with SHA-256
	ES384 = "ES384" // ECDSA P-384 with SHA-384
	RS256 = "RS256" // RSASSA-PKCS1-v1_5 with SHA-256
	RS384 = "RS384" // RSASSA-PKCS1-v1_5 with SHA-384
	PS256 = "PS256" // RSASSA-PSS with SHA-256, MGF1 with SHA-256, salt of 32 bytes
	EdDSA = "EdDSA" // Ed25519 (RFC 8037's name, the default for an Ed25519 key)
	// Ed25519 is RFC 9864's fully specified name of EdDSA with Ed25519,
	// what oauth4webapi writes; the servers accept both names.
	Ed25519 = "Ed25519"
)

// ClientAssertionType is the client_assertion_type of a JWT client
// assertion (RFC 7523 section 2.2).
const ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// AssertionLifetime is the time between a client assertion's "iat" and its
// "exp": it is used once, at once.
const AssertionLifetime = 60 * time.Second

// minRSABits is the smallest RSA modulus accepted (RFC 7518 section 3.3:
// 2048 bits or larger MUST be used); maxRSABits the largest, the servers'
// own bound (the main module's pkg/keysize.MaxRSABits, which this module
// does not import): a larger key's assertions and proofs are refused
// there, so the SDK refuses the key when it is configured, not at the
// first request.
const (
	minRSABits = 2048
	maxRSABits = 4096
)

// defaultAlgorithm is the algorithm of a key when Config.Algorithm is
// empty: ES256 or ES384 by curve, RS256 for RSA, EdDSA for Ed25519.
func defaultAlgorithm(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return ES256
		case elliptic.P384():
			return ES384
		}
	case *rsa.PublicKey:
		return RS256
	case ed25519.PublicKey:
		return EdDSA
	}
	return ""
}

// checkAlgorithm reports whether alg is supported and fits the public key.
func checkAlgorithm(alg string, pub crypto.PublicKey) error {
	if why := algorithmMisfit(alg, pub); why != "" {
		return errors.New("partnerclient: " + why)
	}
	return nil
}

// algorithmMisfit says why alg is not supported or does not fit the public
// key ("": it fits), for each caller to say in its own words.
func algorithmMisfit(alg string, pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		want := map[string]elliptic.Curve{ES256: elliptic.P256(), ES384: elliptic.P384()}[alg]
		if want == nil || k.Curve != want {
			return fmt.Sprintf("algorithm %q does not fit an ECDSA key on %s (ES256: P-256, ES384: P-384)", alg, curveName(k.Curve))
		}
	case *rsa.PublicKey:
		if alg != RS256 && alg != RS384 && alg != PS256 {
			return fmt.Sprintf("algorithm %q does not fit an RSA key (RS256, RS384 or PS256)", alg)
		}
		if k.N.BitLen() < minRSABits {
			return fmt.Sprintf("an RSA key of %d bits: at least %d are required (RFC 7518 section 3.3)", k.N.BitLen(), minRSABits)
		}
		if k.N.BitLen() > maxRSABits {
			return fmt.Sprintf("an RSA key of %d bits: the servers verify at most %d", k.N.BitLen(), maxRSABits)
		}
	case ed25519.PublicKey:
		if alg != EdDSA && alg != Ed25519 {
			return fmt.Sprintf("algorithm %q does not fit an Ed25519 key (EdDSA or Ed25519)", alg)
		}
	default:
		return fmt.Sprintf("unsupported private key type %T (ECDSA P-256/P-384, RSA or Ed25519)", pub)
	}
	return ""
}

func curveName(c elliptic.Curve) string {
	if c == nil || c.Params() == nil {
		return "an unknown curve"
	}
	return c.Params().Name
}

// signature computes the JWS signature of input with alg (RFC 7518 section
// 3) through any crypto.Signer, such as a key in an HSM or a cloud KMS.
func signature(signer crypto.Signer, alg string, input []byte) ([]byte, error) {
	var hash crypto.Hash
	switch alg {
	case ES256, RS256, PS256:
		hash = crypto.SHA256
	case ES384, RS384:
		hash = crypto.SHA384
	case EdDSA, Ed25519:
		// RFC 8037 section 3.1: Ed25519 signs the message itself.
		return signer.Sign(rand.Reader, input, crypto.Hash(0))
	default:
		return nil, fmt.Errorf("unsupported algorithm %q", alg)
	}
	h := hash.New()
	h.Write(input)
	digest := h.Sum(nil)
	switch alg {
	case PS256:
		// RFC 7518 section 3.5: the salt is as long as the hash.
		return signer.Sign(rand.Reader, digest, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthEqualsHash, Hash: hash})
	case RS256, RS384:
		return signer.Sign(rand.Reader, digest, hash)
	}
	der, err := signer.Sign(rand.Reader, digest, hash)
	if err != nil {
		return nil, err
	}
	size := 32
	if alg == ES384 {
		size = 48
	}
	return joseECDSA(der, size)
}

// joseECDSA turns the ASN.1 DER signature crypto.Signer returns for ECDSA
// into the JWS form: R and S as big-endian integers of size bytes each,
// concatenated (RFC 7518 section 3.4).
func joseECDSA(der []byte, size int) ([]byte, error) {
	var sig struct{ R, S *big.Int }
	rest, err := asn1.Unmarshal(der, &sig)
	if err != nil || len(rest) != 0 || sig.R == nil || sig.S == nil || sig.R.Sign() <= 0 || sig.S.Sign() <= 0 {
		return nil, errors.New("the signer returned a malformed ECDSA signature")
	}
	if sig.R.BitLen() > 8*size || sig.S.BitLen() > 8*size {
		return nil, errors.New("the signer returned an ECDSA signature too long for the curve")
	}
	out := make([]byte, 2*size)
	sig.R.FillBytes(out[:size])
	sig.S.FillBytes(out[size:])
	return out, nil
}

// assertionClaims are the claims of a client assertion (RFC 7523 section 3).
type assertionClaims struct {
	Iss string `json:"iss"`
	Sub string `json:"sub"`
	Aud string `json:"aud"`
	Iat int64  `json:"iat"`
	Exp int64  `json:"exp"`
	Jti string `json:"jti"`
}

// newAssertion returns a fresh client assertion, a JWS in compact
// serialization (RFC 7515 section 7.1): iss and sub are the client id
// (RFC 7523 section 3, items 1 and 2, for client authentication), aud the
// authorization server, exp AssertionLifetime after iat, jti 128 random
// bits, so that no two assertions are alike (the server rejects a replayed
// jti, RFC 7523 section 3 item 7).
func newAssertion(signer crypto.Signer, alg, kid, clientID, aud string, now time.Time, random io.Reader) (string, error) {
	var jti [16]byte
	if _, err := io.ReadFull(random, jti[:]); err != nil {
		return "", fmt.Errorf("reading random bytes for jti: %w", err)
	}
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
		Typ string `json:"typ"`
	}{alg, kid, "JWT"})
	if err != nil {
		return "", err
	}
	claims, err := json.Marshal(assertionClaims{
		Iss: clientID, Sub: clientID, Aud: aud,
		Iat: now.Unix(), Exp: now.Add(AssertionLifetime).Unix(),
		Jti: base64.RawURLEncoding.EncodeToString(jti[:]),
	})
	if err != nil {
		return "", err
	}
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	sig, err := signature(signer, alg, []byte(input))
	if err != nil {
		return "", fmt.Errorf("signing the client assertion: %w", err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}
