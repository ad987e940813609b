package accesstoken

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lestrrat-go/jwx/v3/jws"
)

// Lifetime of every access token (spec: Limits, 3600 seconds).
const Lifetime = 3600 * time.Second

// Issuer signs access tokens with a KeySet's active key.
type Issuer struct {
	keys     *KeySet
	issuer   string
	audience string
	headers  jws.Headers
}

// NewIssuer returns an Issuer for tokens with the given "iss" and "aud".
func NewIssuer(keys *KeySet, issuer, audience string) (*Issuer, error) {
	h := jws.NewHeaders()
	if err := h.Set(jws.KeyIDKey, keys.signer.kid); err != nil {
		return nil, fmt.Errorf("set kid: %w", err)
	}
	// RFC 9068 section 2.1: "typ" MUST be "at+jwt".
	if err := h.Set(jws.TypeKey, TypeHeader); err != nil {
		return nil, fmt.Errorf("set typ: %w", err)
	}
	return &Issuer{keys: keys, issuer: issuer, audience: audience, headers: h}, nil
}

// Grant is what a token is issued for.
type Grant struct {
	ClientID   string
	Scope      string
	Generation int64
	Now        time.Time
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
	payload, err := json.Marshal(&c)
	if err != nil {
		return "", Claims{}, fmt.Errorf("encode claims: %w", err)
	}
	s := is.keys.signer
	signed, err := jws.Sign(payload, jws.WithKey(s.alg, s.key, jws.WithProtectedHeaders(is.headers)))
	if err != nil {
		return "", Claims{}, fmt.Errorf("sign token: %w", err)
	}
	return Prefix + string(signed), c, nil
}
