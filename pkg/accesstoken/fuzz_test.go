package accesstoken_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// The fuzz targets verify against keys derived from fixed seeds, so that the
// committed corpus (testdata/fuzz/...) holds tokens that really verify: a
// valid token mutated by the fuzzer is the shortest way to the code behind
// the signature check. These keys sign nothing outside these tests.
const (
	fuzzIssuer   = "https://auth.fuzz.test"
	fuzzAudience = "partner-api"
	fuzzClientID = "svc_fuzzfuzzfuzzfuzzfuzzfuzz"
)

// fuzzNow is the verifier's clock: the corpus tokens were issued at it.
var fuzzNow = time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)

// fuzzTokenErrors are the only errors Verify may return on a static key set.
var fuzzTokenErrors = []error{
	accesstoken.ErrMalformed, accesstoken.ErrHeader, accesstoken.ErrUnknownKey,
	accesstoken.ErrSignature, accesstoken.ErrExpired, accesstoken.ErrNotYet,
	accesstoken.ErrIssuer, accesstoken.ErrAudience, accesstoken.ErrClaims,
}

// fuzzKey is a deterministic private JWK: EdDSA from a seed, ES256 from a
// fixed scalar.
func fuzzKey(t testing.TB, alg string) (jwk.Key, any) {
	t.Helper()
	seed := sha256.Sum256([]byte("authplatform fuzz key " + alg))
	var raw any
	var sigAlg jwa.SignatureAlgorithm
	switch alg {
	case accesstoken.AlgEdDSA:
		raw, sigAlg = ed25519.NewKeyFromSeed(seed[:]), jwa.EdDSA()
	case accesstoken.AlgES256:
		k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), seed[:])
		if err != nil {
			t.Fatal(err)
		}
		raw, sigAlg = k, jwa.ES256()
	}
	k, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := jwk.AssignKeyID(k); err != nil {
		t.Fatal(err)
	}
	if err := k.Set(jwk.AlgorithmKey, sigAlg); err != nil {
		t.Fatal(err)
	}
	if err := k.Set(jwk.KeyUsageKey, jwk.ForSignature); err != nil {
		t.Fatal(err)
	}
	return k, raw
}

// fuzzWorld is the verifier under fuzzing and what crafts its seeds.
type fuzzWorld struct {
	ks       *accesstoken.KeySet
	verifier *accesstoken.Verifier
	edKey    jwk.Key
	edRaw    ed25519.PrivateKey
	esRaw    *ecdsa.PrivateKey
}

func newFuzzWorld(t testing.TB) *fuzzWorld {
	t.Helper()
	ed, edRaw := fuzzKey(t, accesstoken.AlgEdDSA)
	es, esRaw := fuzzKey(t, accesstoken.AlgES256)
	ks, err := accesstoken.NewKeySet(ed, es)
	if err != nil {
		t.Fatal(err)
	}
	return &fuzzWorld{
		ks:       ks,
		verifier: accesstoken.NewVerifier(accesstoken.StaticKeys{Set: ks.Public()}, fuzzIssuer, fuzzAudience, func() time.Time { return fuzzNow }),
		edKey:    ed, edRaw: edRaw.(ed25519.PrivateKey), esRaw: esRaw.(*ecdsa.PrivateKey),
	}
}

func (w *fuzzWorld) kid(alg string) string {
	if alg == accesstoken.AlgES256 {
		k, _ := w.ks.Public().Key(1)
		id, _ := k.KeyID()
		return id
	}
	return w.ks.SigningKeyID()
}

// sign signs payload with the fuzz world's key of alg under header fields
// (jws sets "alg").
func (w *fuzzWorld) sign(t testing.TB, alg string, header map[string]any, payload []byte) string {
	t.Helper()
	h := jws.NewHeaders()
	for k, v := range header {
		if err := h.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	var opt jws.SignOption
	if alg == accesstoken.AlgES256 {
		opt = jws.WithKey(jwa.ES256(), w.esRaw, jws.WithProtectedHeaders(h))
	} else {
		opt = jws.WithKey(jwa.EdDSA(), w.edRaw, jws.WithProtectedHeaders(h))
	}
	signed, err := jws.Sign(payload, opt)
	if err != nil {
		t.Fatal(err)
	}
	return accesstoken.Prefix + string(signed)
}

func fuzzClaims(edit ...any) []byte {
	m := map[string]any{
		"iss": fuzzIssuer, "sub": fuzzClientID, "client_id": fuzzClientID, "aud": fuzzAudience,
		"iat": fuzzNow.Unix(), "exp": fuzzNow.Unix() + 3600, "jti": "fuzz-jti", "scope": "events.subscribe", "gen": 1,
	}
	for i := 0; i+1 < len(edit); i += 2 {
		if edit[i+1] == nil {
			delete(m, edit[i].(string))
		} else {
			m[edit[i].(string)] = edit[i+1]
		}
	}
	b, _ := json.Marshal(m)
	return b
}

func rawB64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

// FuzzVerify feeds Verify "svc_at_" followed by arbitrary bytes. It must
// never panic, must answer one of its documented errors with nil claims,
// and may only succeed for a token that jws.Verify independently finds
// signed by a published key, whose claims are exactly the signed payload
// and pass every rule (issuer, audience, lifetime of at most 3600 s, not
// expired, not issued in the future).
func FuzzVerify(f *testing.F) {
	w := newFuzzWorld(f)
	hdr := map[string]any{"typ": "at+jwt", "kid": w.kid(accesstoken.AlgEdDSA)}
	valid := w.sign(f, accesstoken.AlgEdDSA, hdr, fuzzClaims())
	validES := w.sign(f, accesstoken.AlgES256, map[string]any{"typ": "at+jwt", "kid": w.kid(accesstoken.AlgES256)}, fuzzClaims())
	parts := strings.Split(strings.TrimPrefix(valid, accesstoken.Prefix), ".")
	pub, _ := w.edKey.PublicKey()
	var pubRaw ed25519.PublicKey
	if err := jwk.Export(pub, &pubRaw); err != nil {
		f.Fatal(err)
	}
	hs, err := jws.Sign(fuzzClaims(), jws.WithKey(jwa.HS256(), []byte(pubRaw), jws.WithProtectedHeaders(func() jws.Headers {
		h := jws.NewHeaders()
		_ = h.Set("typ", "at+jwt")
		_ = h.Set("kid", w.kid(accesstoken.AlgEdDSA))
		return h
	}())))
	if err != nil {
		f.Fatal(err)
	}
	seeds := []string{
		strings.TrimPrefix(valid, accesstoken.Prefix),
		strings.TrimPrefix(validES, accesstoken.Prefix),
		"", ".", "..", "...", "a.b.c", "e30.e30.", "e30.e30.e30",
		rawB64(map[string]any{"alg": "none", "typ": "at+jwt", "kid": w.kid(accesstoken.AlgEdDSA)}) + "." + parts[1] + ".",
		string(hs),
		parts[0] + "." + base64.RawURLEncoding.EncodeToString(fuzzClaims("scope", "patients.read referrals.write")) + "." + parts[2],
		parts[0] + "." + parts[1] + "." + parts[2] + "=",
		parts[0] + "." + parts[1] + "." + parts[2] + "==",
		parts[0] + "." + parts[1] + "." + trailingBits(parts[2]),
		parts[0] + "." + parts[1] + "." + base64.StdEncoding.EncodeToString(mustDecode(f, parts[2])),
		parts[0] + "=." + parts[1] + "." + parts[2],
		strings.TrimPrefix(valid, accesstoken.Prefix) + ".x",
		valid, // svc_at_ twice
		`{"payload":"e30","signatures":[]}`,
		strings.Repeat("A", accesstoken.MaxTokenLength),
		"\x00\xff\xfe.\x80.\xc3\x28",
		strings.TrimPrefix(w.sign(f, accesstoken.AlgEdDSA, hdr, fuzzClaims("iat", int64(-1<<63), "exp", int64(1<<63-1))), accesstoken.Prefix),
		strings.TrimPrefix(w.sign(f, accesstoken.AlgEdDSA, map[string]any{"typ": "at+jwt", "kid": w.kid(accesstoken.AlgEdDSA), "crit": []string{"exp"}}, fuzzClaims()), accesstoken.Prefix),
		strings.TrimPrefix(w.sign(f, accesstoken.AlgEdDSA, map[string]any{"typ": "at+jwt", "kid": w.kid(accesstoken.AlgES256)}, fuzzClaims()), accesstoken.Prefix),
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		token := accesstoken.Prefix + string(data)
		c, err := w.verifier.Verify(token)
		if err != nil {
			if c != nil {
				t.Fatalf("Verify returned claims %+v with error %v", c, err)
			}
			known := false
			for _, e := range fuzzTokenErrors {
				known = known || errors.Is(err, e)
			}
			if !known {
				t.Fatalf("Verify error %v is none of the documented ones", err)
			}
			return
		}
		// Accepted: it must be signed by a published key, as jws itself sees it.
		payload, verr := jws.Verify(data, jws.WithKeySet(w.ks.Public(), jws.WithRequireKid(true)))
		if verr != nil {
			t.Fatalf("Verify accepted %q, which jws.Verify refuses: %v", data, verr)
		}
		var want accesstoken.Claims
		if err := json.Unmarshal(payload, &want); err != nil || !reflect.DeepEqual(*c, want) {
			t.Fatalf("claims %+v are not the signed payload %s", c, payload)
		}
		if !claimsValid(want, fuzzNow) || !membersModel(payload) {
			t.Fatalf("Verify accepted claims that break the rules: %s", payload)
		}
		// One token, one spelling: a compact JWS is base64url without
		// padding (RFC 7515 section 2), so an accepted signature segment is
		// the canonical encoding of its bytes. Otherwise a holder could mint
		// endless distinct strings for one token (each a new cache entry).
		seg := strings.Split(string(data), ".")
		sig, err := base64.RawURLEncoding.Strict().DecodeString(seg[2])
		if err != nil || base64.RawURLEncoding.EncodeToString(sig) != seg[2] {
			t.Fatalf("Verify accepted a non-canonical signature encoding %q", seg[2])
		}
	})
}

// trailingBits sets the unused low bits of a base64url segment's last
// character: another spelling of the same bytes.
func trailingBits(seg string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	v := strings.IndexByte(alphabet, seg[len(seg)-1])
	return seg[:len(seg)-1] + string(alphabet[v|0x0f])
}

func mustDecode(t testing.TB, seg string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzVerifySigned signs arbitrary payload bytes with the real key, so the
// fuzzer reaches everything after the signature check: Verify must accept
// exactly the payloads that claimsValid (an independent model of the rules,
// in exact integer arithmetic) accepts.
func FuzzVerifySigned(f *testing.F) {
	w := newFuzzWorld(f)
	now := fuzzNow.Unix()
	for _, p := range [][]byte{
		fuzzClaims(),
		fuzzClaims("scope", ""),
		fuzzClaims("iss", "https://evil.test"),
		fuzzClaims("aud", []string{fuzzAudience}),
		fuzzClaims("exp", now+3601),
		fuzzClaims("exp", now),
		fuzzClaims("iat", now+31, "exp", now+31+3600),
		fuzzClaims("iat", now+30, "exp", now+30+3600),
		fuzzClaims("iat", int64(-1<<63), "exp", int64(1<<63-1)),
		fuzzClaims("iat", int64(-1<<62), "exp", int64(1<<62)),
		fuzzClaims("iat", now+20, "exp", now+10),
		fuzzClaims("exp", 32503680000, "iat", 32503680000-3600),
		fuzzClaims("gen", 0),
		fuzzClaims("gen", "1"),
		fuzzClaims("sub", "svc_other"),
		fuzzClaims("exp", 1.5e9),
		fuzzClaims("nbf", now+31),
		fuzzClaims("nbf", now+30),
		fuzzClaims("nbf", now-1000),
		fuzzClaims("nbf", "soon"),
		[]byte(strings.Replace(string(fuzzClaims()), `"scope":`, `"SCOPE":"patients.read","scope":`, 1)),
		[]byte(strings.Replace(string(fuzzClaims()), `"scope":`, `"\u017fcope":"patients.read","scope":`, 1)),
		[]byte(strings.Replace(string(fuzzClaims()), `"scope":`, `"Scope":`, 1)),
		[]byte(strings.Replace(string(fuzzClaims()), `"scope":`, `"x":1,"x":2,"scope":`, 1)),
		[]byte(`{"ISS":"` + fuzzIssuer + `","sub":"a","client_id":"a","aud":"` + fuzzAudience + `","iat":1,"exp":2,"jti":"j","gen":1}`),
		[]byte(`null`), []byte(`[]`), []byte(`"x"`), []byte(``), []byte(`{"iss":`),
	} {
		f.Add(p)
	}
	hdr := map[string]any{"typ": "at+jwt", "kid": w.kid(accesstoken.AlgEdDSA)}
	f.Fuzz(func(t *testing.T, payload []byte) {
		token := w.sign(t, accesstoken.AlgEdDSA, hdr, payload)
		c, err := w.verifier.Verify(token)
		var m accesstoken.Claims
		want := json.Unmarshal(payload, &m) == nil && membersModel(payload) && claimsValid(m, fuzzNow)
		switch {
		case err == nil && !want:
			t.Fatalf("Verify accepted %s, which breaks the rules", payload)
		case err != nil && want:
			t.Fatalf("Verify refused %s (%v), which keeps the rules", payload, err)
		case err == nil && !reflect.DeepEqual(*c, m):
			t.Fatalf("claims %+v are not the payload %s", c, payload)
		}
	})
}

// membersModel is the model of the member rules, written differently from
// the verifier: every top-level name is mapped to a canonical folding (each
// rune to the smallest rune of its case-folding orbit), and the names must
// be at most MaxMembers, distinct after folding, and spelt exactly when
// they fold to a claim name.
func membersModel(payload []byte) bool {
	fold := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			min := r
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if f < min {
					min = f
				}
			}
			b.WriteRune(min)
		}
		return b.String()
	}
	claims := map[string]string{}
	for _, n := range []string{"iss", "sub", "client_id", "aud", "iat", "exp", "jti", "scope", "gen", "nbf"} {
		claims[fold(n)] = n
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		name := tok.(string)
		f := fold(name)
		if seen[f] || (claims[f] != "" && claims[f] != name) {
			return false
		}
		seen[f] = true
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
	}
	return len(seen) <= accesstoken.MaxMembers
}

// claimsValid is the model of the claim rules: issuer and audience are the
// verifier's, client_id is set and is the subject, jti set, generation
// positive, 0 < exp - iat <= 3600 s (exactly, without overflow), exp in the
// future, iat no later than now plus the leeway.
func claimsValid(c accesstoken.Claims, now time.Time) bool {
	if c.Issuer != fuzzIssuer || c.Audience != fuzzAudience || c.ClientID == "" || c.Subject != c.ClientID || c.ID == "" || c.Generation <= 0 {
		return false
	}
	life := new(big.Int).Sub(big.NewInt(c.ExpiresAt), big.NewInt(c.IssuedAt))
	if c.IssuedAt <= 0 || life.Sign() <= 0 || life.Cmp(big.NewInt(int64(accesstoken.Lifetime/time.Second))) > 0 {
		return false
	}
	if c.NotBefore != 0 && c.NotBefore > now.Add(accesstoken.Leeway).Unix() {
		return false
	}
	return now.Unix() < c.ExpiresAt && c.IssuedAt <= now.Add(accesstoken.Leeway).Unix()
}
