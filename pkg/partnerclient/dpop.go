package partnerclient

// DPoP (RFC 9449): with Config.DPoPKey set, the client proves possession of
// a key on every token request and on every API request, and its tokens
// are bound to that key, so a stolen token is useless without it. The
// proofs are JWS signed with the standard library, as the client
// assertions are (assertion.go).

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DPoP names of RFC 9449.
const (
	// TokenTypeDPoP is the token_type of a DPoP-bound access token (RFC
	// 9449 section 5) and the Authorization scheme it is sent with
	// (section 7.1).
	TokenTypeDPoP = "DPoP"
	// ErrorUseDPoPNonce is the error of an answer asking for a proof with
	// the nonce of its DPoP-Nonce header (sections 8 and 9).
	ErrorUseDPoPNonce = "use_dpop_nonce"
	// ErrorInvalidDPoPProof is the error of an answer refusing a proof.
	ErrorInvalidDPoPProof = "invalid_dpop_proof"
)

// dpopAlgorithms are the algorithms the servers accept in proofs
// (dpop_signing_alg_values_supported).
var dpopAlgorithms = []string{ES256, ES384, RS256, PS256, EdDSA, Ed25519}

// dpopKey signs proofs with one key and remembers the latest nonce each
// server (origin) gave. It is safe for concurrent use.
type dpopKey struct {
	signer crypto.Signer
	alg    string
	header string // the proof's JOSE header, base64url: typ, alg, jwk
	jkt    string // the key's RFC 7638 thumbprint

	mu     sync.Mutex
	nonces map[string]string // origin -> latest DPoP-Nonce
}

// newDPoPKey checks alg against the key (by default ES256 or ES384 by
// curve, RS256 for RSA, EdDSA for Ed25519) and prepares the header every
// proof carries.
func newDPoPKey(signer crypto.Signer, alg string) (*dpopKey, error) {
	pub := signer.Public()
	if alg == "" {
		if alg = defaultAlgorithm(pub); alg == "" {
			return nil, errors.New("partnerclient: DPoP key: unsupported key type or curve (ECDSA P-256 or P-384, RSA, Ed25519)")
		}
	}
	if !slices.Contains(dpopAlgorithms, alg) {
		return nil, fmt.Errorf("partnerclient: DPoP algorithm %q is not supported (ES256, ES384, RS256, PS256, EdDSA or Ed25519)", alg)
	}
	if why := algorithmMisfit(alg, pub); why != "" {
		return nil, errors.New("partnerclient: DPoP key: " + why)
	}
	jwk, err := publicJWK(pub)
	if err != nil {
		return nil, err
	}
	h, err := json.Marshal(struct {
		Typ string          `json:"typ"`
		Alg string          `json:"alg"`
		JWK json.RawMessage `json:"jwk"`
	}{"dpop+jwt", alg, jwk})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(jwk) // jwk is the RFC 7638 canonical form
	return &dpopKey{signer: signer, alg: alg, header: b64url(h), jkt: b64url(sum[:]), nonces: map[string]string{}}, nil
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// publicJWK is the public JWK of pub with exactly the required members in
// lexicographic order and no whitespace: RFC 7638 section 3's canonical
// form, whose SHA-256 is the thumbprint, and a valid jwk header member.
func publicJWK(pub crypto.PublicKey) (json.RawMessage, error) {
	var s string
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		e, err := k.ECDH() // the uncompressed point: 0x04 || x || y
		if err != nil {
			return nil, fmt.Errorf("partnerclient: DPoP key: %w", err)
		}
		p := e.Bytes()
		size := (len(p) - 1) / 2
		s = `{"crv":"` + curveName(k.Curve) + `","kty":"EC","x":"` + b64url(p[1:1+size]) + `","y":"` + b64url(p[1+size:]) + `"}`
	case *rsa.PublicKey:
		s = `{"e":"` + b64url(big.NewInt(int64(k.E)).Bytes()) + `","kty":"RSA","n":"` + b64url(k.N.Bytes()) + `"}`
	case ed25519.PublicKey:
		s = `{"crv":"Ed25519","kty":"OKP","x":"` + b64url(k) + `"}`
	default:
		return nil, fmt.Errorf("partnerclient: unsupported DPoP key type %T", pub)
	}
	return json.RawMessage(s), nil
}

// DPoPThumbprint is the JWK SHA-256 thumbprint (RFC 7638) of a DPoP public
// key: the cnf.jkt of the tokens bound to it (RFC 9449 section 6.1).
func DPoPThumbprint(pub crypto.PublicKey) (string, error) {
	if k, ok := pub.(*ecdsa.PublicKey); ok && k.Curve != elliptic.P256() && k.Curve != elliptic.P384() {
		return "", fmt.Errorf("partnerclient: unsupported DPoP curve %s", curveName(k.Curve))
	}
	jwk, err := publicJWK(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(jwk)
	return b64url(sum[:]), nil
}

// dpopClaims are a proof's claims (RFC 9449 section 4.2).
type dpopClaims struct {
	JTI   string `json:"jti"`
	HTM   string `json:"htm"`
	HTU   string `json:"htu"`
	IAT   int64  `json:"iat"`
	ATH   string `json:"ath,omitempty"`
	Nonce string `json:"nonce,omitempty"`
}

// proof returns a fresh proof for a request of method to u: a random jti
// (128 bits), htu without query and fragment (section 4.2), ath when an
// access token goes with it (section 7.1), and the latest nonce of u's
// origin, if any.
func (d *dpopKey) proof(method string, u *url.URL, accessToken string, now time.Time, random io.Reader) (string, error) {
	var jti [16]byte
	if _, err := io.ReadFull(random, jti[:]); err != nil {
		return "", fmt.Errorf("reading random bytes for jti: %w", err)
	}
	c := dpopClaims{JTI: b64url(jti[:]), HTM: method, HTU: htu(u), IAT: now.Unix(), Nonce: d.nonce(u)}
	if accessToken != "" {
		sum := sha256.Sum256([]byte(accessToken))
		c.ATH = b64url(sum[:])
	}
	claims, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	input := d.header + "." + b64url(claims)
	sig, err := signature(d.signer, d.alg, []byte(input))
	if err != nil {
		return "", fmt.Errorf("signing the DPoP proof: %w", err)
	}
	return input + "." + b64url(sig), nil
}

// htu is u without query, fragment and userinfo (RFC 9449 section 4.2).
func htu(u *url.URL) string {
	v := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	if v.Path == "" {
		v.Path = "/"
	}
	return v.String()
}

// origin is the key of a server's nonce: scheme and host (RFC 6454).
func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

func (d *dpopKey) nonce(u *url.URL) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nonces[origin(u)]
}

// remember keeps the nonce of an answer's DPoP-Nonce header for its
// origin: a server may send a new one with any answer (sections 8.2 and
// 9), and the next proof carries the latest. It reports whether the answer
// carried one.
func (d *dpopKey) remember(u *url.URL, h http.Header) bool {
	n := h.Get("DPoP-Nonce")
	if n == "" || !nonceSyntax(n) {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.nonces) >= maxOrigins {
		clear(d.nonces) // a client talks to a handful of servers
	}
	d.nonces[origin(u)] = n
	return true
}

// maxOrigins bounds the nonces remembered.
const maxOrigins = 64

// nonceSyntax reports whether n is a nonce value of RFC 9449 section 8.1:
// 1*NQCHAR, NQCHAR = %x21 / %x23-5B / %x5D-7E; at most 1 KiB.
func nonceSyntax(n string) bool {
	if len(n) > 1024 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// nonceChallenge reports whether a resource server's 401 asks for a proof
// with its nonce: WWW-Authenticate: DPoP error="use_dpop_nonce" (RFC 9449
// section 9).
func nonceChallenge(resp *http.Response) bool {
	if resp.StatusCode != http.StatusUnauthorized {
		return false
	}
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		scheme, params, _ := strings.Cut(strings.TrimSpace(v), " ")
		if strings.EqualFold(scheme, TokenTypeDPoP) && authParam(params, "error") == ErrorUseDPoPNonce {
			return true
		}
	}
	return false
}

// authParam reads one auth-param of a challenge (RFC 9110 section 11.2):
// name=token or name="quoted-string", comma-separated.
func authParam(params, name string) string {
	s := params
	for s != "" {
		s = strings.TrimLeft(s, " \t,")
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			return ""
		}
		k = strings.TrimSpace(k)
		rest = strings.TrimLeft(rest, " \t")
		var v string
		if strings.HasPrefix(rest, `"`) {
			var b strings.Builder
			i := 1
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				b.WriteByte(rest[i])
			}
			v, s = b.String(), rest[min(i+1, len(rest)):]
		} else {
			v, s, _ = strings.Cut(rest, ",")
			v = strings.TrimSpace(v)
		}
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// authorize sets the request's Authorization, and its DPoP proof when the
// token is DPoP-bound (RFC 9449 section 7.1). A Bearer token, from a server
// that did not bind it (section 5 lets a server answer token_type Bearer),
// goes as Bearer without a proof.
func (s *TokenSource) authorize(req *http.Request, tok tokenValue) error {
	if s.dpop == nil || !strings.EqualFold(tok.typ, TokenTypeDPoP) {
		req.Header.Set("Authorization", "Bearer "+tok.access)
		return nil
	}
	p, err := s.dpop.proof(req.Method, req.URL, tok.access, s.cfg.Now(), rand.Reader)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", TokenTypeDPoP+" "+tok.access)
	req.Header.Set("DPoP", p)
	return nil
}

// tokenValue is what authorize needs of a token.
type tokenValue struct{ access, typ string }

// DPoPThumbprint is the thumbprint of Config.DPoPKey (the cnf.jkt of the
// source's tokens), or "" without DPoP.
func (s *TokenSource) DPoPThumbprint() string {
	if s.dpop == nil {
		return ""
	}
	return s.dpop.jkt
}

// checkDPoP reports a DPoPKey or DPoPAlgorithm that cannot make proofs.
func (c Config) checkDPoP() error {
	if c.DPoPKey == nil {
		if c.DPoPAlgorithm != "" {
			return errors.New("partnerclient: DPoPAlgorithm needs DPoPKey")
		}
		return nil
	}
	_, err := newDPoPKey(c.DPoPKey, c.DPoPAlgorithm)
	return err
}

// dpopTokenRequest adds a proof to a token request (RFC 9449 section 5):
// htm POST, htu the token endpoint, no ath, the endpoint's latest nonce.
func (s *TokenSource) dpopTokenRequest(req *http.Request) error {
	if s.dpop == nil {
		return nil
	}
	p, err := s.dpop.proof(req.Method, req.URL, "", s.cfg.Now(), rand.Reader)
	if err != nil {
		return err
	}
	req.Header.Set("DPoP", p)
	return nil
}

// dpopAnswer remembers the nonce an answer carries, if any, and reports
// whether it carried one.
func (s *TokenSource) dpopAnswer(u *url.URL, resp *http.Response) bool {
	return s.dpop != nil && s.dpop.remember(u, resp.Header)
}

// retryWithNonce reports whether a token request failed with
// use_dpop_nonce and a DPoP-Nonce to retry with (RFC 9449 section 8).
func retryWithNonce(err error) bool {
	var te *TokenError
	return errors.As(err, &te) && te.StatusCode == http.StatusBadRequest && te.Code == ErrorUseDPoPNonce && te.nonce
}
