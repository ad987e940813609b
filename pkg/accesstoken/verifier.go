package accesstoken

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
	"github.com/partnerapi/authplatform/pkg/jsonmembers"
)

// MaxTokenLength bounds what Verify reads; a real token is under 600 bytes.
const MaxTokenLength = 4096

// Leeway tolerated on "iat" and "nbf" for clocks of different replicas: a
// token is accepted up to 30 seconds before the time either names.
const Leeway = 30 * time.Second

// KeySource is a server's signing-key authority as a verifier reads it:
// the public keys that may have signed a token (the token service's own
// set, or its JWKS as fetched by the resource server), and which key ids
// are withdrawn (package keywithdrawal). A withdrawn key's tokens are
// refused whatever the set still holds, cached verifications included, and
// never make a KeyFetcher fetch.
type KeySource interface {
	KeySet() (jwk.Set, error)
	Withdrawn(kid string) bool
}

// StaticKeys is a KeySource over a fixed set of which no key is withdrawn.
type StaticKeys struct{ Set jwk.Set }

// KeySet returns the fixed set.
func (s StaticKeys) KeySet() (jwk.Set, error) { return s.Set, nil }

// Withdrawn reports false: no key of a fixed set is withdrawn.
func (StaticKeys) Withdrawn(string) bool { return false }

// Verifier checks access tokens: signature (jwx), then claims.
type Verifier struct {
	keys     KeySource
	issuer   string
	audience string
	now      func() time.Time
}

// NewVerifier returns a Verifier for tokens of issuer for audience. now is
// the clock (nil: time.Now).
func NewVerifier(keys KeySource, issuer, audience string, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	return &Verifier{keys: keys, issuer: issuer, audience: audience, now: now}
}

// Verify returns the claims of a valid token (with its "svc_at_" prefix).
// The signature is checked by jwx with the key named by "kid" and that key's
// own algorithm, so "alg": "none", HMAC with a public key as secret, or an
// algorithm other than the key's are refused (RFC 8725 section 3.1).
func (v *Verifier) Verify(token string) (*Claims, error) {
	c, err := v.VerifySignature(token)
	if err != nil {
		return nil, err
	}
	if err := v.CheckTime(c); err != nil {
		return nil, err
	}
	return c, nil
}

// VerifySignature checks everything but time: format, header, signature,
// issuer, audience and the presence of every claim. Its result may be cached
// until the token's "exp"; CheckTime must still run on every use.
func (v *Verifier) VerifySignature(token string) (*Claims, error) {
	c, _, err := v.verifySignature(token)
	return c, err
}

// verifySignature is VerifySignature that also returns the kid of the key
// that verified the token.
func (v *Verifier) verifySignature(token string) (*Claims, string, error) {
	if len(token) > MaxTokenLength || !strings.HasPrefix(token, Prefix) {
		return nil, "", ErrMalformed
	}
	compact := []byte(token[len(Prefix):])
	hdr, _, sig, err := jwsbb.SplitCompact(compact)
	if err != nil || !canonicalBase64URL(sig) {
		return nil, "", ErrMalformed
	}
	// Each header member once, in one spelling: which of two "kid"s or of
	// "kid" and "KID" a parser believes differs between parsers.
	if hj, err := base64.RawURLEncoding.DecodeString(string(hdr)); err != nil || !jsonmembers.Strict(hj, headerNames, MaxMembers) {
		return nil, "", ErrHeader
	}
	h := jwsbb.HeaderParseCompact(hdr)
	typ, err := jwsbb.HeaderGetString(h, jws.TypeKey)
	// RFC 9068 section 4: reject tokens whose typ is not at+jwt.
	if err != nil || !(strings.EqualFold(typ, TypeHeader) || strings.EqualFold(typ, "application/"+TypeHeader)) {
		return nil, "", ErrHeader
	}
	kid, err := jwsbb.HeaderGetString(h, jws.KeyIDKey)
	if err != nil || kid == "" {
		return nil, "", ErrHeader
	}
	if v.keys.Withdrawn(kid) {
		return nil, kid, ErrWithdrawnKey
	}
	set, err := v.keys.KeySet()
	if err != nil {
		return nil, "", fmt.Errorf("key set: %w", err)
	}
	key, ok := set.LookupKeyID(kid)
	if !ok {
		return nil, kid, ErrUnknownKey
	}
	alg, err := keyAlgorithm(key)
	if err != nil {
		return nil, "", ErrUnknownKey
	}
	raw, err := rawPublic(key, alg)
	if err != nil {
		return nil, "", ErrUnknownKey
	}
	payload, err := jws.VerifyCompactFast(raw, compact, alg)
	if err != nil {
		return nil, "", ErrSignature
	}
	// The claims are this service's own fixed set, decoded into a struct:
	// jwt.Parse would build a generic map-backed token for the same checks.
	// encoding/json keeps the last of two equal keys and matches keys
	// case-insensitively, so {"scope":"a","SCOPE":"b"} or a lone "Scope"
	// would decode: each claim must appear once, spelt exactly.
	// "cnf" is decoded raw (the outer field shadows Claims.Confirmation)
	// and then checked strictly, whatever its spelling in the JSON.
	var w struct {
		Claims
		Cnf json.RawMessage `json:"cnf"`
	}
	if !jsonmembers.Strict(payload, claimNames, MaxMembers) {
		return nil, "", ErrClaims
	}
	if err := json.Unmarshal(payload, &w); err != nil {
		return nil, "", ErrClaims
	}
	c := w.Claims
	if w.Cnf != nil {
		conf, ok := parseConfirmation(w.Cnf)
		if !ok {
			return nil, "", ErrClaims
		}
		c.Confirmation = conf
	}
	if c.Issuer != v.issuer {
		return nil, "", ErrIssuer
	}
	if c.Audience != v.audience {
		return nil, "", ErrAudience
	}
	if c.ClientID == "" || c.Subject != c.ClientID || c.ID == "" || c.ExpiresAt == 0 || c.IssuedAt == 0 || c.Generation <= 0 || c.SecretID < 0 {
		return nil, "", ErrClaims
	}
	// 0 < exp - iat <= Lifetime. iat > 0 and exp > iat keep the subtraction
	// from overflowing: a signed {"iat": -2^62, "exp": 2^62} would otherwise
	// wrap to a negative lifetime and be good for ever.
	if c.IssuedAt <= 0 || c.ExpiresAt <= c.IssuedAt || c.ExpiresAt-c.IssuedAt > int64(Lifetime/time.Second) {
		return nil, "", ErrClaims
	}
	return &c, kid, nil
}

// CheckTime checks "exp" and "iat" against the verifier's clock
// (RFC 7519 sections 4.1.4 and 4.1.6).
func (v *Verifier) CheckTime(c *Claims) error {
	now := v.now()
	if now.Unix() >= c.ExpiresAt {
		return ErrExpired
	}
	if time.Unix(c.IssuedAt, 0).After(now.Add(Leeway)) {
		return ErrNotYet
	}
	// RFC 7519 section 4.1.5: not accepted before "nbf" (less Leeway).
	if c.NotBefore != 0 && time.Unix(c.NotBefore, 0).After(now.Add(Leeway)) {
		return ErrNotYet
	}
	return nil
}

// Member names whose spelling jsonmembers.Strict enforces: the JOSE header
// members this package reads, and the claims of Claims.
var (
	headerNames = []string{"alg", "kid", "typ", "crit", "b64", "jku", "jwk", "x5u", "x5c", "cty"}
	claimNames  = []string{"iss", "sub", "client_id", "aud", "iat", "exp", "jti", "scope", "gen", "nbf", "secret_id", "cnf"}
	cnfNames    = []string{"jkt", "x5t#S256"}
)

// ValidJKT reports whether s has the form of a JWK SHA-256 thumbprint
// (RFC 7638) in base64url without padding: 43 characters, the one
// spelling of 32 bytes.
func ValidJKT(s string) bool {
	return len(s) == 43 && canonicalBase64URL([]byte(s))
}

// parseConfirmation reads a token's "cnf" strictly (RFC 7800 section 3.1,
// RFC 9449 section 6.1, RFC 8705 section 3.1): an object of "jkt",
// "x5t#S256" or both, each spelt exactly and holding a SHA-256 thumbprint
// (ValidJKT). "cnf": null, {} or any other confirmation method is
// refused: a token bound by a method this service cannot check must never
// pass for a bearer token.
func parseConfirmation(raw json.RawMessage) (*Confirmation, bool) {
	if !jsonmembers.Strict(raw, cnfNames, MaxMembers) {
		return nil, false
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || len(members) == 0 || len(members) > 2 {
		return nil, false
	}
	var conf Confirmation
	for name, v := range members {
		var tp string
		if err := json.Unmarshal(v, &tp); err != nil || !ValidJKT(tp) {
			return nil, false
		}
		switch name {
		case "jkt":
			conf.JKT = tp
		case "x5t#S256":
			conf.X5T = tp
		default:
			return nil, false
		}
	}
	return &conf, true
}

// Now is the verifier's clock.
func (v *Verifier) Now() time.Time { return v.now() }

// canonicalBase64URL reports whether seg is the one base64url spelling of
// its bytes, without padding (RFC 7515 section 2). jwx decodes padded,
// standard-alphabet and non-zero-trailing-bit spellings alike, so without
// this one signature has many spellings and a token holder could mint
// endless distinct token strings, each a new entry of a verified-token
// cache. The header and payload need no such check: they are signed as
// the very bytes sent.
func canonicalBase64URL(seg []byte) bool {
	raw, err := base64.RawURLEncoding.DecodeString(string(seg))
	return err == nil && base64.RawURLEncoding.EncodeToString(raw) == string(seg)
}

func rawPublic(key jwk.Key, alg jwa.SignatureAlgorithm) (any, error) {
	pub, err := key.PublicKey()
	if err != nil {
		return nil, err
	}
	var raw any
	if err := jwk.Export(pub, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}
