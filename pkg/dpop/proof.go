package dpop

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/jsonmembers"
	"github.com/partnerapi/authplatform/pkg/keysize"
)

// TypeHeader is the JOSE "typ" of a DPoP proof (RFC 9449 section 4.2).
const TypeHeader = "dpop+jwt"

// Algorithms are the JWS algorithms a proof may be signed with (RFC 7518
// section 3.1, RFC 8037 section 3.1, and Ed25519, EdDSA's fully specified
// name for Ed25519 keys, RFC 9864 section 2.2), in the order the servers
// advertise them: dpop_signing_alg_values_supported (RFC 9449 section 5.1)
// and the algs of a WWW-Authenticate challenge (section 7.1). Never "none"
// nor a MAC: a proof is verified with the public key it carries.
var Algorithms = []string{"ES256", "ES384", "RS256", "PS256", "EdDSA", "Ed25519"}

// algsList is Algorithms joined with spaces, as a challenge's algs.
const algsList = "ES256 ES384 RS256 PS256 EdDSA Ed25519"

// Bounds of a proof (RFC 9449 section 4.3). A proof is sent on every
// request and verified before anything else is known of the caller, so
// each bound also caps the work an anonymous request can cause.
const (
	// DefaultWindow is how old a proof's "iat" may be (check 11: "within
	// an acceptable window"). A proof is made for one request just before
	// it is sent: 60 s covers a slow network and a retry after a 429,
	// while a captured proof is useless a minute later. The window also
	// bounds how long a proof's jti is remembered (ReplayTTL).
	DefaultWindow = 60 * time.Second
	// DefaultLeeway is how far ahead of the server's clock an "iat" may be:
	// the clock skew tolerated between client and server. It is small
	// because a proof dated ahead stays usable for longer (its jti is
	// remembered for the window plus this leeway).
	DefaultLeeway = 5 * time.Second
	// MaxProofLength bounds the DPoP header value: an RSA-4096 jwk is about
	// 0.8 KB, a proof with it under 2 KB.
	MaxProofLength = 8 << 10
	// MaxHeaderLength bounds the proof's JOSE header, base64url-encoded as
	// sent: 2 KiB, 1.5 KiB of JSON, holds the header of an RSA-4096 jwk
	// with every optional member (about 1.1 KiB encoded) and room to
	// spare. A longer one is refused as too long before it is decoded: the
	// jwk of a larger key, which MaxProofLength alone would let reach about
	// 16,000 bits, would be refused for its size (package keysize) anyway,
	// but only after the header's JSON was checked and decoded, four passes
	// over it (TestSignatureCost in deploy/e2e/tokenholes measures what an
	// unauthenticated proof costs the token service).
	MaxHeaderLength = 2 << 10
	// MaxJTILength bounds the "jti" (RFC 9449 section 4.2 asks for at least
	// 96 bits of randomness, 16 base64url characters).
	MaxJTILength = 256
	// maxMembers bounds the members of the header, of the jwk and of the
	// claims.
	maxMembers = 32
)

// Input is what a proof is checked against: the request it came with and
// the server's state. It holds nothing of net/http, so the token endpoint,
// the resource server and the admin API build it from their own parsed
// request.
type Input struct {
	// Headers are the values of the request's DPoP header field
	// (http.Header.Values("DPoP")): exactly one is accepted (RFC 9449
	// section 4.3, check 1).
	Headers []string
	// Method is the request's method, compared with "htm" exactly
	// (methods are case-sensitive, RFC 9110 section 9.1).
	Method string
	// URI is the request's target URI as the client addressed it: behind a
	// proxy, the configured public base URL plus the request's path, never
	// the address the server listens on. Its query and fragment are
	// ignored (section 4.3, check 9; see NormalizeURI).
	URI string
	// AltURI, when not empty, is the one other URI the request may have
	// been addressed at, configuration too: the token endpoint's mutual-TLS
	// alias (RFC 8705 section 5, mtls_endpoint_aliases). "htu" may name
	// either.
	AltURI string
	// AccessToken, when not empty, is the access token sent with the proof
	// (Authorization: DPoP): "ath" must then be its hash (section 4.3,
	// check 12; section 7.1). Empty at the token endpoint, where no token is
	// presented and an "ath" is ignored.
	AccessToken string
	// Now is the server's clock reading.
	Now time.Time
	// Window and Leeway bound "iat" to [Now-Window, Now+Leeway] (0:
	// DefaultWindow, DefaultLeeway).
	Window, Leeway time.Duration
	// Nonces, when not nil, requires a "nonce" that it reports valid
	// (sections 8 and 9): without one, or with one it refuses, the proof is
	// refused with UseNonce, and the answer carries a fresh nonce in
	// DPoP-Nonce. Nil: nonces are not used and a "nonce" is ignored.
	Nonces NonceChecker
}

// NonceChecker reports whether a proof's nonce is one the server issued and
// still accepts. *NonceSource is one.
type NonceChecker interface {
	Valid(nonce string, now time.Time) bool
}

// Proof is a verified proof.
type Proof struct {
	// JKT is the JWK SHA-256 thumbprint of the proof's public key (RFC 7638,
	// base64url without padding): the "jkt" of the cnf claim of a token
	// bound to it (RFC 9449 section 6.1).
	JKT string
	// JTI is the proof's unique identifier (section 4.2); ReplayKey derives
	// its single-use mark.
	JTI string
	// IssuedAt is the proof's "iat".
	IssuedAt time.Time
	// Algorithm is the proof's "alg".
	Algorithm string
}

// header holds the JOSE header members a proof may carry. Crit and B64 are
// read only to refuse them.
type header struct {
	Typ  string          `json:"typ"`
	Alg  string          `json:"alg"`
	JWK  json.RawMessage `json:"jwk"`
	Crit json.RawMessage `json:"crit"`
	B64  json.RawMessage `json:"b64"`
}

// publicJWK holds the members of the proof's jwk: the public ones of the
// three key types (RFC 7518 section 6, RFC 8037 section 2) and, only to
// refuse them, the private ones (RFC 7518 sections 6.2.2, 6.3.2 and 6.4.1:
// "d", the RSA primes and CRT values, "oth", a symmetric key's "k").
type publicJWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
	N   string `json:"n"`
	E   string `json:"e"`

	D   json.RawMessage `json:"d"`
	P   json.RawMessage `json:"p"`
	Q   json.RawMessage `json:"q"`
	DP  json.RawMessage `json:"dp"`
	DQ  json.RawMessage `json:"dq"`
	QI  json.RawMessage `json:"qi"`
	Oth json.RawMessage `json:"oth"`
	K   json.RawMessage `json:"k"`
}

func (j *publicJWK) private() bool {
	return j.D != nil || j.P != nil || j.Q != nil || j.DP != nil || j.DQ != nil || j.QI != nil || j.Oth != nil || j.K != nil
}

// claims are the claims of a proof (RFC 9449 section 4.2).
type claims struct {
	JTI   string   `json:"jti"`
	HTM   string   `json:"htm"`
	HTU   string   `json:"htu"`
	IAT   *float64 `json:"iat"`
	ATH   *string  `json:"ath"`
	Nonce *string  `json:"nonce"`
}

// Member names whose spelling is enforced (see jsonmembers.Strict).
var (
	headerNames = []string{"typ", "alg", "jwk", "crit", "b64", "kid", "jku", "x5u", "x5c", "cty"}
	jwkNames    = []string{"kty", "crv", "x", "y", "n", "e", "d", "p", "q", "dp", "dq", "qi", "oth", "k", "kid", "alg", "use", "key_ops"}
	claimNames  = []string{"jti", "htm", "htu", "iat", "ath", "nonce", "exp", "nbf"}
)

var b64url = base64.RawURLEncoding.Strict()

// Verify checks a DPoP proof against in, as RFC 9449 section 4.3 lists:
// one DPoP header (check 1) holding a JWS in compact serialization (2),
// with typ dpop+jwt (4), an alg of Algorithms (5), a public jwk that fits
// the alg and holds no private member (7) and verifies the signature (6);
// claims jti (bounded), htm, htu and iat (3), htm equal to in.Method (8),
// htu equal to in.URI without query and fragment after normalization (9),
// iat within [in.Now-Window, in.Now+Leeway] (11), ath the hash of
// in.AccessToken when one is given (12), and a nonce in.Nonces accepts when
// it is set (10). Every refusal is an *Error.
//
// The jti's single use (section 11.1) is not checked here: the caller
// records ReplayKey(proof) with SET NX in the round trip it makes anyway
// (see the package documentation), and refuses with ErrReplayed when the
// mark existed. Nothing is cached between calls.
func Verify(in Input) (Proof, error) {
	switch {
	case len(in.Headers) == 0:
		return Proof{}, errMissing
	case len(in.Headers) > 1:
		return Proof{}, errMultiple
	}
	raw := in.Headers[0]
	if len(raw) > MaxProofLength {
		return Proof{}, errTooLong
	}
	hdrB64, rest, ok1 := strings.Cut(raw, ".")
	payloadB64, sigB64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || hdrB64 == "" || payloadB64 == "" || sigB64 == "" || strings.IndexByte(sigB64, '.') >= 0 {
		return Proof{}, errCompact
	}
	if len(hdrB64) > MaxHeaderLength {
		return Proof{}, errTooLong
	}
	// The signature in its one base64url spelling: jwx also accepts
	// padded or standard-alphabet spellings, and a proof must not have
	// several strings for one signature.
	if _, err := b64url.DecodeString(sigB64); err != nil {
		return Proof{}, errCompact
	}

	hdrJSON, err := b64url.DecodeString(hdrB64)
	if err != nil || !jsonmembers.Strict(hdrJSON, headerNames, maxMembers) {
		return Proof{}, errHeader
	}
	var h header
	if err := json.Unmarshal(hdrJSON, &h); err != nil {
		return Proof{}, errHeader
	}
	if !strings.EqualFold(h.Typ, TypeHeader) && !strings.EqualFold(h.Typ, "application/"+TypeHeader) {
		return Proof{}, errTyp
	}
	alg, ok := signatureAlgorithm(h.Alg)
	if !ok {
		return Proof{}, errAlg
	}
	if h.Crit != nil || h.B64 != nil {
		return Proof{}, errCrit
	}
	if h.JWK == nil || bytes.Equal(h.JWK, []byte("null")) {
		return Proof{}, errNoJWK
	}
	pub, key, err := publicKey(h.JWK, h.Alg)
	if err != nil {
		return Proof{}, err
	}
	payload, err := jws.VerifyCompactFast(pub, []byte(raw), alg)
	if err != nil {
		return Proof{}, errSignature
	}
	tp, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return Proof{}, errJWK
	}

	if !jsonmembers.Strict(payload, claimNames, maxMembers) {
		return Proof{}, errClaims
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Proof{}, errClaims
	}
	if c.JTI == "" || len(c.JTI) > MaxJTILength {
		return Proof{}, errJTI
	}
	if c.HTM != in.Method {
		return Proof{}, errHTM
	}
	if !sameURI(c.HTU, in.URI) && (in.AltURI == "" || !sameURI(c.HTU, in.AltURI)) {
		return Proof{}, errHTU
	}
	iat, err := issuedAt(c.IAT)
	if err != nil {
		return Proof{}, err
	}
	window, leeway := in.Window, in.Leeway
	if window <= 0 {
		window = DefaultWindow
	}
	if leeway <= 0 {
		leeway = DefaultLeeway
	}
	if iat.Before(in.Now.Add(-window)) {
		return Proof{}, errIATOld
	}
	if iat.After(in.Now.Add(leeway)) {
		return Proof{}, errIATFuture
	}
	if in.AccessToken != "" {
		if c.ATH == nil {
			return Proof{}, errATHMissing
		}
		want := AccessTokenHash(in.AccessToken)
		if subtle.ConstantTimeCompare([]byte(*c.ATH), []byte(want)) != 1 {
			return Proof{}, errATH
		}
	}
	// The nonce last: use_dpop_nonce goes only to a proof that is good
	// otherwise, so that the client's retry with the nonce succeeds.
	if in.Nonces != nil {
		if c.Nonce == nil || *c.Nonce == "" {
			return Proof{}, errNonceMissing
		}
		if !in.Nonces.Valid(*c.Nonce, in.Now) {
			return Proof{}, errNonceStale
		}
	}
	return Proof{JKT: b64url.EncodeToString(tp), JTI: c.JTI, IssuedAt: iat, Algorithm: h.Alg}, nil
}

// signatureAlgorithm maps an alg of Algorithms to jwx's value.
func signatureAlgorithm(alg string) (jwa.SignatureAlgorithm, bool) {
	switch alg {
	case "ES256":
		return jwa.ES256(), true
	case "ES384":
		return jwa.ES384(), true
	case "RS256":
		return jwa.RS256(), true
	case "PS256":
		return jwa.PS256(), true
	case "EdDSA":
		return jwa.EdDSA(), true
	case "Ed25519":
		return jwa.EdDSAEd25519(), true
	}
	return jwa.SignatureAlgorithm{}, false
}

// publicKey reads the proof's jwk (RFC 9449 section 4.3, check 7): public
// members only, of the key type and curve alg needs, of their exact
// lengths. It returns the key for verification and as a jwk.Key for its
// thumbprint.
//
// The key is built here from the decoded members rather than by
// jwk.ParseKey: the members must be checked one by one anyway (a private
// member refused, not silently dropped as jwx does when it makes a public
// key; coordinates of the curve's length), and ParseKey's reflective
// probing would add its cost to every request. jwk.Import then gives jwx's
// RFC 7638 thumbprint of the same key.
func publicKey(raw json.RawMessage, alg string) (any, jwk.Key, error) {
	if !jsonmembers.Strict(raw, jwkNames, maxMembers) {
		return nil, nil, errJWK
	}
	var j publicJWK
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, nil, errJWK
	}
	if j.private() {
		return nil, nil, errPrivateJWK
	}
	var pub any
	switch alg {
	case "ES256", "ES384":
		curve, size := elliptic.P256(), 32
		if alg == "ES384" {
			curve, size = elliptic.P384(), 48
		}
		if j.Kty != "EC" || j.Crv != curve.Params().Name {
			return nil, nil, errJWK
		}
		x, errX := b64url.DecodeString(j.X)
		y, errY := b64url.DecodeString(j.Y)
		if errX != nil || errY != nil || len(x) != size || len(y) != size {
			return nil, nil, errJWK
		}
		point := make([]byte, 0, 1+2*size)
		point = append(append(append(point, 4), x...), y...)
		k, err := ecdsa.ParseUncompressedPublicKey(curve, point) // checks the point is on the curve
		if err != nil {
			return nil, nil, errJWK
		}
		pub = k
	case "RS256", "PS256":
		if j.Kty != "RSA" {
			return nil, nil, errJWK
		}
		k, ok := rsaPublicKey(j.N, j.E)
		if !ok {
			return nil, nil, errJWK
		}
		pub = k
	case "EdDSA", "Ed25519":
		if j.Kty != "OKP" || j.Crv != "Ed25519" {
			return nil, nil, errJWK
		}
		x, err := b64url.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, nil, errJWK
		}
		pub = ed25519.PublicKey(x)
	default:
		return nil, nil, errAlg
	}
	key, err := jwk.Import(pub)
	if err != nil {
		return nil, nil, errJWK
	}
	return pub, key, nil
}

// rsaPublicKey reads "n" and "e" (RFC 7518 section 6.3.1): n of
// keysize.MinRSABits to keysize.MaxRSABits without leading zero octets
// (section 6.3.1.1), e odd and between 3 and 2^31-1. A longer "n" is
// refused before it is decoded: an RSA check's cost grows with the modulus,
// and a proof is checked before its sender authenticates.
func rsaPublicKey(n64, e64 string) (*rsa.PublicKey, bool) {
	if len(n64) > b64url.EncodedLen(keysize.MaxRSAModulusBytes) {
		return nil, false
	}
	n, errN := b64url.DecodeString(n64)
	e, errE := b64url.DecodeString(e64)
	if errN != nil || errE != nil || len(n) == 0 || n[0] == 0 || len(e) == 0 || len(e) > 4 || e[0] == 0 {
		return nil, false
	}
	var ev int64
	for _, b := range e {
		ev = ev<<8 | int64(b)
	}
	if ev < 3 || ev > math.MaxInt32 || ev%2 == 0 {
		return nil, false
	}
	if !keysize.RSA(n) {
		return nil, false
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(ev)}, true
}

// issuedAt reads "iat" (RFC 7519 section 2, NumericDate: seconds, possibly
// fractional).
func issuedAt(n *float64) (time.Time, error) {
	if n == nil {
		return time.Time{}, errIATMissing
	}
	f := *n
	if f < 0 || f > 1<<40 {
		return time.Time{}, errClaims
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}

// sameURI compares a proof's htu with the request's URI (RFC 9449 section
// 4.3, check 9): equal once both are normalized by NormalizeURI.
func sameURI(htu, uri string) bool {
	a, ok := NormalizeURI(htu)
	if !ok {
		return false
	}
	b, ok := NormalizeURI(uri)
	return ok && a == b
}

// AccessTokenHash is the "ath" of a proof sent with accessToken (RFC 9449
// section 4.2): the base64url SHA-256 of its ASCII octets.
func AccessTokenHash(accessToken string) string {
	sum := sha256.Sum256([]byte(accessToken))
	return b64url.EncodeToString(sum[:])
}

// CheckBinding checks that a proof's key is the one a token is bound to:
// jkt is the token's cnf.jkt (RFC 9449 sections 6.1 and 7.1). It returns an
// *Error (InvalidProof) when they differ.
func CheckBinding(p Proof, jkt string) error {
	if jkt == "" || subtle.ConstantTimeCompare([]byte(p.JKT), []byte(jkt)) != 1 {
		return errBinding
	}
	return nil
}
