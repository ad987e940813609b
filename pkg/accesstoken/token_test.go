package accesstoken_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

const (
	issuer   = "https://auth.example.test"
	audience = "https://api.example.test"
	clientID = "svc_abcdefghijklmnopqrstuvwx"
)

var now = time.Date(2031, 3, 14, 15, 9, 26, 0, time.UTC)

func clockAt(t time.Time) func() time.Time { return func() time.Time { return t } }

func grant(gen int64) accesstoken.Grant {
	return accesstoken.Grant{ClientID: clientID, Scope: "programme.metrics.read events.subscribe", Generation: gen, Now: now}
}

func verifier(set jwk.Set, clock func() time.Time) *accesstoken.Verifier {
	return accesstoken.NewVerifier(accesstoken.StaticKeys{Set: set}, issuer, audience, clock)
}

// fixture is a key set with its issuer, verifier and raw signing key, for
// crafting tokens by hand.
type fixture struct {
	key    jwk.Key
	ks     *accesstoken.KeySet
	issuer *accesstoken.Issuer
	verify *accesstoken.Verifier
	raw    any // the raw private key
	alg    jwa.SignatureAlgorithm
}

func newFixture(t testing.TB, alg string) *fixture {
	t.Helper()
	k := mustKey(t, alg)
	ks := mustSet(t, k)
	is, err := accesstoken.NewIssuer(ks, issuer, audience)
	if err != nil {
		t.Fatalf("NewIssuer: %v", err)
	}
	f := &fixture{key: k, ks: ks, issuer: is, verify: verifier(ks.Public(), clockAt(now))}
	switch alg {
	case accesstoken.AlgES256:
		var raw ecdsa.PrivateKey
		if err := jwk.Export(k, &raw); err != nil {
			t.Fatal(err)
		}
		f.raw, f.alg = &raw, jwa.ES256()
	default:
		var raw ed25519.PrivateKey
		if err := jwk.Export(k, &raw); err != nil {
			t.Fatal(err)
		}
		f.raw, f.alg = raw, jwa.EdDSA()
	}
	return f
}

func (f *fixture) issue(t testing.TB, g accesstoken.Grant) (string, accesstoken.Claims) {
	t.Helper()
	tok, c, err := f.issuer.Issue(g)
	if err != nil {
		t.Fatalf("Issue: %v", err)
	}
	return tok, c
}

// sign signs claims (any JSON value) with the fixture's key under the given
// protected header fields ("alg" is set by jws).
func (f *fixture) sign(t testing.TB, claims any, header map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	h := jws.NewHeaders()
	for k, v := range header {
		if err := h.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	signed, err := jws.Sign(payload, jws.WithKey(f.alg, f.raw, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	return accesstoken.Prefix + string(signed)
}

func (f *fixture) header() map[string]any {
	return map[string]any{"typ": "at+jwt", "kid": f.ks.SigningKeyID()}
}

func validClaims() map[string]any {
	return map[string]any{
		"iss": issuer, "sub": clientID, "client_id": clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Unix() + 3600, "jti": "abc", "scope": "", "gen": 1,
	}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
		} else {
			out[kv[i].(string)] = kv[i+1]
		}
	}
	return out
}

func b64(v any) string {
	b, _ := json.Marshal(v)
	return base64.RawURLEncoding.EncodeToString(b)
}

func segments(t testing.TB, tok string) []string {
	t.Helper()
	if !strings.HasPrefix(tok, accesstoken.Prefix) {
		t.Fatalf("token %q lacks the prefix", tok)
	}
	parts := strings.Split(strings.TrimPrefix(tok, accesstoken.Prefix), ".")
	if len(parts) != 3 {
		t.Fatalf("token has %d segments", len(parts))
	}
	return parts
}

func decodeSegment(t testing.TB, s string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestIssueVerifyRoundTrip(t *testing.T) {
	for _, alg := range []string{accesstoken.AlgEdDSA, accesstoken.AlgES256} {
		t.Run(alg, func(t *testing.T) {
			f := newFixture(t, alg)
			tok, claims := f.issue(t, grant(7))
			if len(tok) > 600 {
				t.Errorf("token is %d bytes, expected under 600", len(tok))
			}
			parts := segments(t, tok)

			hdr := decodeSegment(t, parts[0])
			wantHdr := map[string]any{"alg": alg, "typ": "at+jwt", "kid": f.ks.SigningKeyID()}
			if !reflect.DeepEqual(hdr, wantHdr) {
				t.Errorf("header = %v, want %v", hdr, wantHdr)
			}

			payload := decodeSegment(t, parts[1])
			jti, _ := payload["jti"].(string)
			if !regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`).MatchString(jti) {
				t.Errorf("jti = %q, want 128 random bits in base64url", jti)
			}
			wantPayload := map[string]any{
				"iss": issuer, "sub": clientID, "client_id": clientID, "aud": audience,
				"iat": float64(now.Unix()), "exp": float64(now.Unix() + 3600), "jti": jti,
				"scope": "programme.metrics.read events.subscribe", "gen": float64(7),
			}
			if !reflect.DeepEqual(payload, wantPayload) {
				t.Errorf("payload = %v, want %v", payload, wantPayload)
			}
			wantClaims := accesstoken.Claims{
				Issuer: issuer, Subject: clientID, ClientID: clientID, Audience: audience,
				IssuedAt: now.Unix(), ExpiresAt: now.Unix() + 3600, ID: jti,
				Scope: "programme.metrics.read events.subscribe", Generation: 7,
			}
			if claims != wantClaims {
				t.Errorf("Issue claims = %+v, want %+v", claims, wantClaims)
			}

			got, err := f.verify.Verify(tok)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if *got != wantClaims {
				t.Errorf("Verify = %+v, want %+v", *got, wantClaims)
			}
			if !got.HasScope("events.subscribe") || got.HasScope("patients.read") || got.HasScope("events") {
				t.Errorf("HasScope is wrong for %q", got.Scope)
			}

			tok2, _ := f.issue(t, grant(7))
			if tok2 == tok || decodeSegment(t, segments(t, tok2)[1])["jti"] == jti {
				t.Error("two tokens share a jti")
			}
		})
	}
}

func TestScopes(t *testing.T) {
	for _, tc := range []struct {
		scope string
		want  []string
	}{
		{"", []string{}},
		{"a", []string{"a"}},
		{"a b", []string{"a", "b"}},
	} {
		c := accesstoken.Claims{Scope: tc.scope}
		if got := c.Scopes(); got == nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Scopes(%q) = %#v, want %#v", tc.scope, got, tc.want)
		}
	}
}

func TestVerifyTime(t *testing.T) {
	f := newFixture(t, "")
	tok, _ := f.issue(t, grant(1))
	for _, tc := range []struct {
		at   time.Time
		want error
	}{
		{now, nil},
		{now.Add(accesstoken.Lifetime - time.Second), nil},
		{now.Add(accesstoken.Lifetime), accesstoken.ErrExpired},
		{now.Add(24 * time.Hour), accesstoken.ErrExpired},
		// A replica whose clock is behind accepts a token within the leeway.
		{now.Add(-accesstoken.Leeway), nil},
		{now.Add(-accesstoken.Leeway - time.Second), accesstoken.ErrNotYet},
		{now.Add(-time.Hour), accesstoken.ErrNotYet},
	} {
		_, err := verifier(f.ks.Public(), clockAt(tc.at)).Verify(tok)
		if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
			t.Errorf("Verify at %+v = %v, want %v", tc.at.Sub(now), err, tc.want)
		}
	}
	if accesstoken.Lifetime != time.Hour {
		t.Errorf("Lifetime = %v, the guides say 3600 s", accesstoken.Lifetime)
	}
}

func TestVerifyRejects(t *testing.T) {
	f := newFixture(t, "")
	good, _ := f.issue(t, grant(1))
	parts := segments(t, good)
	other := newFixture(t, "") // a key the verifier does not know

	// Tampered: the payload re-encoded with a wider scope, signature kept.
	tampered := decodeSegment(t, parts[1])
	tampered["scope"] = "patients.read referrals.write"
	tamperedTok := accesstoken.Prefix + parts[0] + "." + b64(tampered) + "." + parts[2]

	// alg none: a header naming a real kid, no signature.
	noneTok := accesstoken.Prefix + b64(map[string]any{"alg": "none", "typ": "at+jwt", "kid": f.ks.SigningKeyID()}) +
		"." + parts[1] + "."

	// HS256 with the Ed25519 public key's bytes as HMAC secret (the
	// classic algorithm confusion attack).
	var pub ed25519.PublicKey
	pk, _ := f.key.PublicKey()
	if err := jwk.Export(pk, &pub); err != nil {
		t.Fatal(err)
	}
	hsHeaders := jws.NewHeaders()
	_ = hsHeaders.Set("typ", "at+jwt")
	_ = hsHeaders.Set("kid", f.ks.SigningKeyID())
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	hs, err := jws.Sign(payload, jws.WithKey(jwa.HS256(), []byte(pub), jws.WithProtectedHeaders(hsHeaders)))
	if err != nil {
		t.Fatalf("craft HS256 token: %v", err)
	}
	hsTok := accesstoken.Prefix + string(hs)

	// The same with the public key in its JWK JSON form as secret.
	pkJSON, _ := json.Marshal(pk)
	hs2, err := jws.Sign(payload, jws.WithKey(jwa.HS256(), pkJSON, jws.WithProtectedHeaders(hsHeaders)))
	if err != nil {
		t.Fatal(err)
	}

	// The "alg" header changed to another algorithm the set knows (ES256)
	// while the key says EdDSA.
	algSwap := accesstoken.Prefix + b64(map[string]any{"alg": "ES256", "typ": "at+jwt", "kid": f.ks.SigningKeyID()}) +
		"." + parts[1] + "." + parts[2]

	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"empty", "", accesstoken.ErrMalformed},
		{"missing prefix", strings.TrimPrefix(good, accesstoken.Prefix), accesstoken.ErrMalformed},
		{"other prefix", "svc_cs_" + strings.TrimPrefix(good, accesstoken.Prefix), accesstoken.ErrMalformed},
		{"prefix only", accesstoken.Prefix, accesstoken.ErrMalformed},
		{"double prefix", accesstoken.Prefix + good, accesstoken.ErrHeader},
		{"garbage", accesstoken.Prefix + "garbage", accesstoken.ErrMalformed},
		{"two segments", accesstoken.Prefix + parts[0] + "." + parts[1], accesstoken.ErrMalformed},
		{"four segments", good + ".x", accesstoken.ErrMalformed},
		{"header not base64", accesstoken.Prefix + "!!!." + parts[1] + "." + parts[2], accesstoken.ErrHeader},
		{"too long", good + strings.Repeat("A", accesstoken.MaxTokenLength), accesstoken.ErrMalformed},
		{"too long by one", accesstoken.Prefix + strings.Repeat("A", accesstoken.MaxTokenLength-len(accesstoken.Prefix)+1), accesstoken.ErrMalformed},
		{"alg none", noneTok, accesstoken.ErrSignature},
		{"HS256 with the public key bytes", hsTok, accesstoken.ErrSignature},
		{"HS256 with the public JWK", accesstoken.Prefix + string(hs2), accesstoken.ErrSignature},
		{"alg swapped", algSwap, accesstoken.ErrSignature},
		{"unknown kid", other.sign(t, validClaims(), other.header()), accesstoken.ErrUnknownKey},
		{"unknown key, known kid", other.sign(t, validClaims(), f.header()), accesstoken.ErrSignature},
		{"missing kid", f.sign(t, validClaims(), map[string]any{"typ": "at+jwt"}), accesstoken.ErrHeader},
		{"empty kid", f.sign(t, validClaims(), map[string]any{"typ": "at+jwt", "kid": ""}), accesstoken.ErrHeader},
		{"missing typ", f.sign(t, validClaims(), map[string]any{"kid": f.ks.SigningKeyID()}), accesstoken.ErrHeader},
		{"typ JWT", f.sign(t, validClaims(), with(f.header(), "typ", "JWT")), accesstoken.ErrHeader},
		{"typ application/jwt", f.sign(t, validClaims(), with(f.header(), "typ", "application/jwt")), accesstoken.ErrHeader},
		{"tampered payload", tamperedTok, accesstoken.ErrSignature},
		{"signature of another token", accesstoken.Prefix + parts[0] + "." + segments(t, f.sign(t, validClaims(), f.header()))[1] + "." + parts[2], accesstoken.ErrSignature},
		{"other issuer", f.sign(t, with(validClaims(), "iss", "https://evil.test"), f.header()), accesstoken.ErrIssuer},
		{"no issuer", f.sign(t, with(validClaims(), "iss", nil), f.header()), accesstoken.ErrIssuer},
		{"other audience", f.sign(t, with(validClaims(), "aud", "https://other.test"), f.header()), accesstoken.ErrAudience},
		{"audience as array", f.sign(t, with(validClaims(), "aud", []string{audience}), f.header()), accesstoken.ErrClaims},
		{"payload not an object", f.sign(t, "hello", f.header()), accesstoken.ErrClaims},
		{"expired", f.sign(t, with(validClaims(), "iat", now.Unix()-3600, "exp", now.Unix()), f.header()), accesstoken.ErrExpired},
		{"iat far in the future", f.sign(t, with(validClaims(), "iat", now.Unix()+600, "exp", now.Unix()+600+3600), f.header()), accesstoken.ErrNotYet},
		{"exp-iat over 3600", f.sign(t, with(validClaims(), "exp", now.Unix()+3601), f.header()), accesstoken.ErrClaims},
		{"lifetime of a year", f.sign(t, with(validClaims(), "exp", now.Unix()+365*24*3600), f.header()), accesstoken.ErrClaims},
		{"gen 0", f.sign(t, with(validClaims(), "gen", 0), f.header()), accesstoken.ErrClaims},
		{"gen negative", f.sign(t, with(validClaims(), "gen", -1), f.header()), accesstoken.ErrClaims},
		{"no gen", f.sign(t, with(validClaims(), "gen", nil), f.header()), accesstoken.ErrClaims},
		{"gen as string", f.sign(t, with(validClaims(), "gen", "1"), f.header()), accesstoken.ErrClaims},
		{"no exp", f.sign(t, with(validClaims(), "exp", nil), f.header()), accesstoken.ErrClaims},
		{"no iat", f.sign(t, with(validClaims(), "iat", nil), f.header()), accesstoken.ErrClaims},
		{"no jti", f.sign(t, with(validClaims(), "jti", nil), f.header()), accesstoken.ErrClaims},
		{"no client_id", f.sign(t, with(validClaims(), "client_id", nil, "sub", ""), f.header()), accesstoken.ErrClaims},
		{"sub is not client_id", f.sign(t, with(validClaims(), "sub", "svc_zzzzzzzzzzzzzzzzzzzzzzzz"), f.header()), accesstoken.ErrClaims},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := f.verify.Verify(tc.token)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %+v, %v; want %v", c, err, tc.want)
			}
			if c != nil {
				t.Fatalf("Verify returned claims with an error: %+v", c)
			}
		})
	}

	// Sanity: the hand-signed baseline and application/at+jwt are accepted,
	// so the cases above fail for the reason they name.
	for name, tok := range map[string]string{
		"hand-signed baseline":   f.sign(t, validClaims(), f.header()),
		"typ application/at+jwt": f.sign(t, validClaims(), with(f.header(), "typ", "application/at+jwt")),
	} {
		if _, err := f.verify.Verify(tok); err != nil {
			t.Errorf("%s: Verify = %v, want success", name, err)
		}
	}
}

// TestRetiredKey: after a rotation, a token signed by the previous key still
// verifies as long as that key is published; new tokens use the new key.
func TestRetiredKey(t *testing.T) {
	f := newFixture(t, accesstoken.AlgEdDSA)
	oldTok, _ := f.issue(t, grant(1))
	next := mustKey(t, accesstoken.AlgES256)
	rotated, err := f.ks.Rotated(next, 1)
	if err != nil {
		t.Fatal(err)
	}
	is, err := accesstoken.NewIssuer(rotated, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	newTok, _, err := is.Issue(grant(1))
	if err != nil {
		t.Fatal(err)
	}
	if h := decodeSegment(t, segments(t, newTok)[0]); h["kid"] != kid(t, next) || h["alg"] != "ES256" {
		t.Fatalf("new token header = %v, want the new ES256 key", h)
	}
	v := verifier(rotated.Public(), clockAt(now))
	for name, tok := range map[string]string{"retired key": oldTok, "new key": newTok} {
		if _, err := v.Verify(tok); err != nil {
			t.Errorf("%s: Verify = %v", name, err)
		}
	}
	// Once no longer published, the retired key's tokens are refused.
	dropped, err := rotated.Rotated(mustKey(t, ""), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifier(dropped.Public(), clockAt(now)).Verify(oldTok); !errors.Is(err, accesstoken.ErrUnknownKey) {
		t.Errorf("token of an unpublished key: Verify = %v, want ErrUnknownKey", err)
	}
	// The old verifier does not know the new key.
	if _, err := f.verify.Verify(newTok); !errors.Is(err, accesstoken.ErrUnknownKey) {
		t.Errorf("old verifier on a new-key token = %v, want ErrUnknownKey", err)
	}
}

// TestConcurrentIssueVerify: one Issuer (whose JOSE header object is shared
// by every call) and one Verifier serve many goroutines; run with -race.
func TestConcurrentIssueVerify(t *testing.T) {
	f := newFixture(t, "")
	const workers, each = 8, 50
	var mu sync.Mutex
	jtis := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				g := grant(int64(w*each + i + 1))
				tok, _, err := f.issuer.Issue(g)
				if err != nil {
					t.Error(err)
					return
				}
				c, err := f.verify.Verify(tok)
				if err != nil {
					t.Error(err)
					return
				}
				if c.Generation != g.Generation {
					t.Errorf("token of generation %d verified as %d", g.Generation, c.Generation)
				}
				mu.Lock()
				jtis[c.ID] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(jtis) != workers*each {
		t.Fatalf("%d distinct jti for %d tokens", len(jtis), workers*each)
	}
}

type failingKeys struct{}

func (failingKeys) KeySet() (jwk.Set, error) { return nil, errors.New("jwks unreachable") }
func (failingKeys) Withdrawn(string) bool    { return false }

func TestVerifyKeySourceError(t *testing.T) {
	f := newFixture(t, "")
	tok, _ := f.issue(t, grant(1))
	v := accesstoken.NewVerifier(failingKeys{}, issuer, audience, clockAt(now))
	if c, err := v.Verify(tok); err == nil || c != nil {
		t.Fatalf("Verify with a failing key source = %+v, %v; want an error", c, err)
	}
}

func TestVerifierClock(t *testing.T) {
	f := newFixture(t, "")
	if got := verifier(f.ks.Public(), clockAt(now)).Now(); !got.Equal(now) {
		t.Errorf("Now() = %v, want the injected %v", got, now)
	}
	if got := verifier(f.ks.Public(), nil).Now(); time.Since(got) > time.Minute || time.Since(got) < 0 {
		t.Errorf("Now() with a nil clock = %v, want the wall clock", got)
	}
}

func BenchmarkIssue(b *testing.B) {
	f := newFixture(b, accesstoken.AlgEdDSA)
	g := grant(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := f.issuer.Issue(g); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	f := newFixture(b, accesstoken.AlgEdDSA)
	tok, _ := f.issue(b, grant(1))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.verify.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}

// CheckNames names every missing name at once.
func TestCheckNames(t *testing.T) {
	if err := accesstoken.CheckNames("https://issuer.test", "partner-api"); err != nil {
		t.Errorf("both given: %v", err)
	}
	err := accesstoken.CheckNames("", "")
	if err == nil || !strings.Contains(err.Error(), "issuer is required") || !strings.Contains(err.Error(), "audience is required") {
		t.Errorf("neither given: %v", err)
	}
}
