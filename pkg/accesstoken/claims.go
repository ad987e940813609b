package accesstoken

import (
	"errors"
	"strings"
)

// Prefix starts every access token.
const Prefix = "svc_at_"

// TypeHeader is the JOSE "typ" of an access token (RFC 9068 section 2.1).
const TypeHeader = "at+jwt"

// Claims are the claims of an access token (RFC 9068 section 2.2, RFC 7519
// section 4.1). Generation is the client's credential generation at issue:
// a rotation or revocation raises the client's generation, so every token
// that carries an older one is dead.
type Claims struct {
	Issuer     string `json:"iss"`
	Subject    string `json:"sub"`
	ClientID   string `json:"client_id"`
	Audience   string `json:"aud"`
	IssuedAt   int64  `json:"iat"`
	ExpiresAt  int64  `json:"exp"`
	ID         string `json:"jti"`
	Scope      string `json:"scope"`
	Generation int64  `json:"gen"`
	// NotBefore is "nbf" (RFC 7519 section 4.1.5). The issuer never sets
	// it; a token that carries one is refused before that time, less
	// Leeway.
	NotBefore int64 `json:"nbf,omitempty"`
}

// Scopes returns the token's scopes as a list, never nil.
func (c *Claims) Scopes() []string {
	if c.Scope == "" {
		return []string{}
	}
	return strings.Fields(c.Scope)
}

// HasScope reports whether the token carries scope s.
func (c *Claims) HasScope(s string) bool {
	for _, have := range strings.Fields(c.Scope) {
		if have == s {
			return true
		}
	}
	return false
}

// MaxMembers bounds the members of a token's JOSE header and of its claims
// set; a real token has 3 and 9 (10 with "nbf").
const MaxMembers = 32

// Errors returned by Verify. Every one of them means "not a valid token";
// they differ only for logs and tests, never on the wire.
var (
	ErrMalformed  = errors.New("accesstoken: malformed token")
	ErrHeader     = errors.New("accesstoken: unacceptable JOSE header")
	ErrUnknownKey = errors.New("accesstoken: unknown key id")
	ErrSignature  = errors.New("accesstoken: bad signature")
	ErrExpired    = errors.New("accesstoken: expired")
	ErrNotYet     = errors.New("accesstoken: issued in the future or not valid yet")
	ErrIssuer     = errors.New("accesstoken: wrong issuer")
	ErrAudience   = errors.New("accesstoken: wrong audience")
	ErrClaims     = errors.New("accesstoken: missing or invalid claims")
)
