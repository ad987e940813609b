package accesstoken

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
)

// maxSigLen sizes the token buffer: Ed25519 and ES256 signatures are 64 bytes.
const maxSigLen = 64

// Lifetime of every access token: 3600 seconds (RFC 6749 section 5.1
// expires_in; resourceserver/apidocs/guides/rate-limits.md, Limits).
const Lifetime = 3600 * time.Second

// Issuer signs access tokens with a KeySet's active key.
type Issuer struct {
	keys     *KeySet
	issuer   string
	audience string
	// header is the protected JOSE header, the same for every token, encoded
	// once: jws.Sign would rebuild and re-encode it for each token.
	header []byte
}

// joseHeader is the protected header of every token (RFC 7515 section 4,
// RFC 9068 section 2.1).
type joseHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

// NewIssuer returns an Issuer for tokens with the given "iss" and "aud".
func NewIssuer(keys *KeySet, issuer, audience string) (*Issuer, error) {
	// RFC 9068 section 2.1: "typ" MUST be "at+jwt".
	h, err := json.Marshal(joseHeader{Alg: keys.signer.alg.String(), Kid: keys.signer.kid, Typ: TypeHeader})
	if err != nil {
		return nil, fmt.Errorf("encode header: %w", err)
	}
	return &Issuer{keys: keys, issuer: issuer, audience: audience, header: h}, nil
}

// Grant is what a token is issued for.
type Grant struct {
	ClientID   string
	Scope      string
	Generation int64
	// SecretID is the id of the secret the client authenticated with
	// (Claims.SecretID; 0 or 1 leave the claim out).
	SecretID int64
	// JKT, when not empty, binds the token to a DPoP key: the thumbprint
	// of the proof's key (RFC 9449 section 6.1), its "cnf": {"jkt": JKT}.
	JKT string
	// X5T, when not empty, binds the token to a client certificate: its
	// SHA-256 thumbprint (RFC 8705 section 3.1), "cnf": {"x5t#S256": X5T}
	// (beside a JKT, if any).
	X5T string
	Now time.Time
}

// Issue signs a token for g and returns it with its claims.
func (is *Issuer) Issue(g Grant) (string, Claims, error) {
	var jti [16]byte
	if _, err := rand.Read(jti[:]); err != nil {
		return "", Claims{}, fmt.Errorf("jti: %w", err)
	}
	now := g.Now.Unix()
	c := Claims{
		Issuer:     is.issuer,
		Subject:    g.ClientID,
		ClientID:   g.ClientID,
		Audience:   is.audience,
		IssuedAt:   now,
		ExpiresAt:  now + int64(Lifetime/time.Second),
		ID:         base64.RawURLEncoding.EncodeToString(jti[:]),
		Scope:      g.Scope,
		Generation: g.Generation,
	}
	if g.SecretID > 1 {
		c.SecretID = g.SecretID
	}
	if g.JKT != "" {
		if !ValidJKT(g.JKT) {
			return "", Claims{}, fmt.Errorf("jkt: not a base64url SHA-256 thumbprint")
		}
		c.Confirmation = &Confirmation{JKT: g.JKT}
	}
	if g.X5T != "" {
		if !ValidJKT(g.X5T) {
			return "", Claims{}, fmt.Errorf("x5t#S256: not a base64url SHA-256 thumbprint")
		}
		if c.Confirmation == nil {
			c.Confirmation = &Confirmation{}
		}
		c.Confirmation.X5T = g.X5T
	}
	payload, err := json.Marshal(&c)
	if err != nil {
		return "", Claims{}, fmt.Errorf("encode claims: %w", err)
	}
	// jwx's JWS building blocks (RFC 7515 section 5.1): the signing input,
	// its signature by the key's algorithm, the compact serialization.
	s := is.keys.signer
	buf := make([]byte, 0, base64.RawURLEncoding.EncodedLen(len(is.header))+base64.RawURLEncoding.EncodedLen(len(payload))+base64.RawURLEncoding.EncodedLen(maxSigLen)+2)
	input := jwsbb.SignBuffer(buf, is.header, payload, base64.RawURLEncoding, true)
	sig, err := jwsbb.Sign(s.key, s.alg.String(), input, nil)
	if err != nil {
		return "", Claims{}, fmt.Errorf("sign token: %w", err)
	}
	signed := jwsbb.AppendSignature(input, sig, base64.RawURLEncoding)
	return Prefix + string(signed), c, nil
}
