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
	// SecretID is the id of the client secret the token was issued for
	// ("secret_id", a private claim): retiring that secret kills the token
	// (deploy/docs/operator-guide.md: Rotation without downtime). Tokens issued before secrets
	// had ids carry none, and belong to secret 1 (CredentialID).
	SecretID int64 `json:"secret_id,omitempty"`
	// NotBefore is "nbf" (RFC 7519 section 4.1.5). The issuer never sets
	// it; a token that carries one is refused before that time, less
	// Leeway.
	NotBefore int64 `json:"nbf,omitempty"`
	// Confirmation is "cnf" (RFC 7800 section 3.1): set on a token bound
	// to a DPoP key (RFC 9449 section 6.1), to a client certificate (RFC
	// 8705 section 3.1) or to both, nil on a bearer token. The verifier
	// accepts "jkt" and "x5t#S256", one or both, and nothing else in it: a
	// token bound by a method this service does not know is refused,
	// never taken for a bearer token.
	Confirmation *Confirmation `json:"cnf,omitempty"`
}

// Confirmation is a token's "cnf" claim: the key, the certificate or both
// it is bound to. A server admitting the token checks every member.
type Confirmation struct {
	// JKT is the RFC 7638 JWK SHA-256 thumbprint of the DPoP key, base64url
	// without padding (RFC 9449 section 6.1): dpop.Proof.JKT.
	JKT string `json:"jkt,omitempty"`
	// X5T is the SHA-256 thumbprint of the client certificate of the
	// mutual-TLS connection the token was obtained over, base64url
	// without padding (RFC 8705 section 3.1, "x5t#S256"):
	// clientcert.Thumbprint.
	X5T string `json:"x5t#S256,omitempty"`
}

// BoundKey is the thumbprint of the DPoP key the token is bound to
// (cnf.jkt), "" for a bearer token. A server that admits the token
// compares it with the proof's key (dpop.CheckBinding); a bound token
// presented without a proof is refused (RFC 9449 section 7.1).
func (c *Claims) BoundKey() string {
	if c.Confirmation == nil {
		return ""
	}
	return c.Confirmation.JKT
}

// BoundCertificate is the x5t#S256 of the client certificate the token is
// bound to (RFC 8705 section 3.1), "" when it is bound to none. A server
// that admits the token compares it with the certificate of the request's
// connection; a bound token without that certificate is refused (section
// 3).
func (c *Claims) BoundCertificate() string {
	if c.Confirmation == nil {
		return ""
	}
	return c.Confirmation.X5T
}

// CredentialID is the id of the secret the token came from: SecretID, or 1
// when it carries none.
func (c *Claims) CredentialID() int64 {
	if c.SecretID == 0 {
		return 1
	}
	return c.SecretID
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

// ErrInvalidToken is what every error below is (errors.Is): the token is
// not valid. Any other error of a verifier means it could not check the
// token (its key set could not be read), which a server answers 503, not
// 401.
var ErrInvalidToken = errors.New("accesstoken: invalid token")

// Errors returned by Verify. Every one of them is an ErrInvalidToken; they
// differ only for logs, metrics and tests, never on the wire.
var (
	ErrMalformed  error = invalidToken("malformed token")
	ErrHeader     error = invalidToken("unacceptable JOSE header")
	ErrUnknownKey error = invalidToken("unknown key id")
	// ErrWithdrawnKey: the token's key is withdrawn (KeySource.Withdrawn).
	ErrWithdrawnKey error = invalidToken("withdrawn key")
	ErrSignature    error = invalidToken("bad signature")
	ErrExpired      error = invalidToken("expired")
	ErrNotYet       error = invalidToken("issued in the future or not valid yet")
	ErrIssuer       error = invalidToken("wrong issuer")
	ErrAudience     error = invalidToken("wrong audience")
	ErrClaims       error = invalidToken("missing or invalid claims")
)

// invalidTokenError is one reason a token is invalid.
type invalidTokenError struct{ reason string }

func invalidToken(reason string) *invalidTokenError { return &invalidTokenError{reason} }

func (e *invalidTokenError) Error() string { return "accesstoken: " + e.reason }

// Is makes every reason an ErrInvalidToken.
func (e *invalidTokenError) Is(target error) bool { return target == ErrInvalidToken }
