package faults

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// b64 is base64url without padding of v's JSON (RFC 7515 section 2).
func b64(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// claims are a token's claims as a map, to be edited.
type claims map[string]any

// with returns a copy with kv set (a nil value deletes the claim).
func (c claims) with(kv ...any) claims {
	out := claims{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

// validClaims are the claims the token service would sign for id at now.
func validClaims(id, scope string, gen int64, now time.Time) claims {
	return claims{
		"iss": issuer, "sub": id, "client_id": id, "aud": audience,
		"iat": now.Unix(), "exp": now.Unix() + 3600, "jti": "crafted-" + id, "scope": scope, "gen": gen,
	}
}

// forger crafts tokens by hand: with the real signing key (what only the
// token service can do: tests of the claim rules), with an attacker's key,
// or with no key at all.
type forger struct {
	realKid  string
	real     ed25519.PrivateKey
	realPub  ed25519.PublicKey
	evil     ed25519.PrivateKey
	evilKid  string
	evilJWK  jwk.Key
	pubJWK   []byte // the real public key as JWK JSON
	jwksJSON []byte // the published JWKS document
}

func newForger(t testing.TB, s *stack) *forger {
	t.Helper()
	_, evil, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	evilJWK, err := jwk.Import(evil.Public())
	if err != nil {
		t.Fatal(err)
	}
	if err := jwk.AssignKeyID(evilJWK); err != nil {
		t.Fatal(err)
	}
	evilKid, _ := evilJWK.KeyID()
	pub, _ := s.keys.Public().Key(0)
	pubJSON, err := json.Marshal(pub)
	if err != nil {
		t.Fatal(err)
	}
	jwks, err := s.keys.PublicJSON()
	if err != nil {
		t.Fatal(err)
	}
	return &forger{
		realKid: s.keys.SigningKeyID(), real: s.signer, realPub: s.signer.Public().(ed25519.PublicKey),
		evil: evil, evilKid: evilKid, evilJWK: evilJWK, pubJWK: pubJSON, jwksJSON: jwks,
	}
}

// header is the token service's JOSE header with kv changed.
func (f *forger) header(kv ...any) claims {
	return claims{"alg": "EdDSA", "typ": "at+jwt", "kid": f.realKid}.with(kv...)
}

// ed signs header.payload with an Ed25519 key.
func ed(key ed25519.PrivateKey, header, payload any) string {
	in := b64(header) + "." + b64(payload)
	return accesstoken.Prefix + in + "." + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(in)))
}

// hs signs header.payload with HMAC-SHA256 keyed by secret.
func hs(secret []byte, header, payload any) string {
	in := b64(header) + "." + b64(payload)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(in))
	return accesstoken.Prefix + in + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// unsigned is header.payload with the given signature segment.
func unsigned(header, payload any, sig string) string {
	return accesstoken.Prefix + b64(header) + "." + b64(payload) + "." + sig
}

// segments splits a token's compact JWS.
func segments(token string) []string {
	return strings.Split(strings.TrimPrefix(token, accesstoken.Prefix), ".")
}

// craftedToken is a hostile token and why it must be refused.
type craftedToken struct {
	name  string
	token string
}

// craftedTokens are tokens no request may be admitted with: forged, badly
// formed, tampered, foreign, or signed by the real key but breaking a claim
// rule. good is a real token of client id (generation gen) and now the
// servers' token clock.
func (f *forger) craftedTokens(t testing.TB, good, id string, gen int64, now time.Time) []craftedToken {
	t.Helper()
	c := validClaims(id, "events.subscribe", gen, now)
	seg := segments(good)
	far := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

	// jwx's own signer, for HS256 keyed with the public key (the algorithm
	// confusion attack) built the way an attacker's library would.
	hsJWX := func(secret []byte) string {
		h := jws.NewHeaders()
		_ = h.Set("typ", "at+jwt")
		_ = h.Set("kid", f.realKid)
		payload, _ := json.Marshal(c)
		out, err := jws.Sign(payload, jws.WithKey(jwa.HS256(), secret, jws.WithProtectedHeaders(h)))
		if err != nil {
			t.Fatal(err)
		}
		return accesstoken.Prefix + string(out)
	}
	other := ed(f.real, f.header(), c.with("jti", "another"))
	return []craftedToken{
		// No signature.
		{"alg none, real kid", unsigned(f.header("alg", "none"), c, "")},
		{"alg none, no kid", unsigned(claims{"alg": "none", "typ": "at+jwt"}, c, "")},
		{"alg None", unsigned(f.header("alg", "None"), c, "")},
		{"alg none, real signature kept", unsigned(f.header("alg", "none"), c, seg[2])},
		{"alg missing", unsigned(claims{"typ": "at+jwt", "kid": f.realKid}, c, seg[2])},
		{"no signature segment", accesstoken.Prefix + seg[0] + "." + seg[1]},
		{"empty signature", accesstoken.Prefix + seg[0] + "." + seg[1] + "."},
		// Algorithm confusion: HMAC keyed with public material.
		{"HS256 keyed with the public key bytes", hs(f.realPub, f.header("alg", "HS256"), c)},
		{"HS256 keyed with the public JWK", hs(f.pubJWK, f.header("alg", "HS256"), c)},
		{"HS256 keyed with the JWKS document", hs(f.jwksJSON, f.header("alg", "HS256"), c)},
		{"HS256 by jwx with the public key", hsJWX(f.realPub)},
		{"HS512 alg with HS256 signature", hs(f.realPub, f.header("alg", "HS512"), c)},
		{"ES256 alg on the EdDSA key", unsigned(f.header("alg", "ES256"), c, seg[2])},
		// Keys.
		{"unknown kid", ed(f.evil, f.header("kid", f.evilKid), c)},
		{"missing kid", ed(f.real, f.header("kid", nil), c)},
		{"empty kid", ed(f.real, f.header("kid", ""), c)},
		{"kid as a number", ed(f.real, f.header("kid", 1), c)},
		{"kid path traversal", ed(f.evil, f.header("kid", "../../../../dev/null"), c)},
		{"known kid, attacker's key", ed(f.evil, f.header(), c)},
		{"embedded jwk of the attacker", ed(f.evil, f.header("kid", f.evilKid, "jwk", f.evilJWK), c)},
		{"jku to the attacker", ed(f.evil, f.header("kid", f.evilKid, "jku", "https://evil.test/jwks.json"), c)},
		{"exp far in the future, unknown key", ed(f.evil, f.header("kid", f.evilKid), c.with("exp", far))},
		{"exp far in the future, attacker's key under the real kid", ed(f.evil, f.header(), c.with("exp", far, "iat", far-3600))},
		// Tampered: payload changed, the real signature kept.
		{"tampered scope", accesstoken.Prefix + seg[0] + "." + b64(c.with("scope", "patients.read referrals.write")) + "." + seg[2]},
		{"tampered client_id", accesstoken.Prefix + seg[0] + "." + b64(c.with("client_id", "svc_aaaaaaaaaaaaaaaaaaaaaaaa", "sub", "svc_aaaaaaaaaaaaaaaaaaaaaaaa")) + "." + seg[2]},
		{"tampered generation", accesstoken.Prefix + seg[0] + "." + b64(c.with("gen", gen+1)) + "." + seg[2]},
		{"tampered exp", accesstoken.Prefix + seg[0] + "." + b64(c.with("exp", far)) + "." + seg[2]},
		{"tampered header", accesstoken.Prefix + b64(f.header("typ", "at+JWT", "x", 1)) + "." + seg[1] + "." + seg[2]},
		{"signature of another token", accesstoken.Prefix + seg[0] + "." + seg[1] + "." + segments(other)[2]},
		{"truncated signature", accesstoken.Prefix + seg[0] + "." + seg[1] + "." + seg[2][:len(seg[2])-4]},
		{"signature flipped", accesstoken.Prefix + seg[0] + "." + seg[1] + "." + flip(seg[2])},
		// Signed by the real key, but breaking a claim rule.
		{"another issuer", ed(f.real, f.header(), c.with("iss", "https://evil.test"))},
		{"issuer with a trailing slash", ed(f.real, f.header(), c.with("iss", issuer+"/"))},
		{"no issuer", ed(f.real, f.header(), c.with("iss", nil))},
		{"another audience", ed(f.real, f.header(), c.with("aud", "other-api"))},
		{"audience as an array", ed(f.real, f.header(), c.with("aud", []string{audience}))},
		{"exp far in the future, real key", ed(f.real, f.header(), c.with("exp", far))},
		{"lifetime overflowing int64, real key", ed(f.real, f.header(), c.with("iat", int64(-1<<62), "exp", int64(1<<62)))},
		{"exp before iat, real key", ed(f.real, f.header(), c.with("iat", now.Unix()+20, "exp", now.Unix()+10))},
		{"expired, real key", ed(f.real, f.header(), c.with("iat", now.Unix()-3600, "exp", now.Unix()))},
		{"issued in the future, real key", ed(f.real, f.header(), c.with("iat", now.Unix()+600, "exp", now.Unix()+4200))},
		{"typ JWT", ed(f.real, f.header("typ", "JWT"), c)},
		{"no typ", ed(f.real, f.header("typ", nil), c)},
		{"crit header", ed(f.real, f.header("crit", []string{"exp"}), c)},
		{"b64 false", ed(f.real, f.header("b64", false, "crit", []string{"b64"}), c)},
		{"generation 0", ed(f.real, f.header(), c.with("gen", 0))},
		{"sub is not client_id", ed(f.real, f.header(), c.with("sub", "svc_bbbbbbbbbbbbbbbbbbbbbbbb"))},
		{"no jti", ed(f.real, f.header(), c.with("jti", nil))},
		{"payload not an object", ed(f.real, f.header(), "svc_at_")},
		{"unknown client, real key", ed(f.real, f.header(), validClaims("svc_cccccccccccccccccccccccc", "", 1, now))},
		{"client id not of the form, real key", ed(f.real, f.header(), validClaims("svc_'; DROP TABLE--", "", 1, now))},
		{"generation ahead, real key", ed(f.real, f.header(), c.with("gen", gen+1))},
		{"nbf in the future, real key", ed(f.real, f.header(), c.with("nbf", now.Unix()+600))},
		{"SCOPE beside scope, real key", ed(f.real, f.header(), prepend(c, `"SCOPE":"patients.read referrals.write",`))},
		{"scope twice, real key", ed(f.real, f.header(), prepend(c, `"scope":"patients.read referrals.write",`))},
		{"Client_ID alone, real key", ed(f.real, f.header(), prepend(c.with("client_id", nil), `"Client_ID":`+strconvQuote(id)+`,`))},
		{"kid twice in the header, real key", ed(f.real, prepend(f.header(), `"kid":"`+f.evilKid+`",`), c)},
		{"KID beside kid in the header, real key", ed(f.real, prepend(f.header(), `"KID":"`+f.evilKid+`",`), c)},
		// The prefix.
		{"missing svc_at_ prefix", strings.TrimPrefix(good, accesstoken.Prefix)},
		{"doubled svc_at_ prefix", accesstoken.Prefix + good},
		{"upper-case prefix", "SVC_AT_" + strings.TrimPrefix(good, accesstoken.Prefix)},
		{"secret prefix", "svc_cs_" + strings.TrimPrefix(good, accesstoken.Prefix)},
		{"prefix only", accesstoken.Prefix},
		{"prefix and garbage", accesstoken.Prefix + "garbage"},
		{"four segments", good + ".e30"},
		{"JSON serialization", accesstoken.Prefix + `{"payload":"` + seg[1] + `","protected":"` + seg[0] + `","signature":"` + seg[2] + `"}`},
		{"padded signature", good + "=="},
		{"signature with its unused trailing bits set", accesstoken.Prefix + seg[0] + "." + seg[1] + "." + trailingBits(seg[2])},
		{"signature in the standard base64 alphabet", accesstoken.Prefix + seg[0] + "." + seg[1] + "." + stdAlphabet(seg[2])},
		{"too long", good + strings.Repeat("A", accesstoken.MaxTokenLength)},
	}
}

// prepend is obj as JSON with members (ending in a comma) written first:
// repeated and case-variant members, which a map cannot hold.
func prepend(obj claims, members string) json.RawMessage {
	b, _ := json.Marshal(obj)
	return json.RawMessage("{" + members + string(b[1:]))
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// flip changes the first character of a base64url segment.
func flip(s string) string {
	if s[0] == 'A' {
		return "B" + s[1:]
	}
	return "A" + s[1:]
}

// trailingBits sets the unused low bits of a base64url segment's last
// character: another spelling of the same bytes.
func trailingBits(seg string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	v := strings.IndexByte(alphabet, seg[len(seg)-1])
	return seg[:len(seg)-1] + string(alphabet[v|0x0f])
}

// stdAlphabet re-encodes a base64url segment in the standard alphabet,
// padded.
func stdAlphabet(seg string) string {
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(raw)
}
