package accesstoken_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// TestStrictClaims: "nbf" is honoured with Leeway; a claim repeated, in
// two spellings, or in a case variant alone ("Scope") is refused; header
// members likewise. Every token here carries a good signature.
func TestStrictClaims(t *testing.T) {
	w := newFuzzWorld(t)
	now := fuzzNow.Unix()
	kid := w.kid(accesstoken.AlgEdDSA)
	hdr := map[string]any{"typ": "at+jwt", "kid": kid}
	with := func(old, repl string) []byte {
		p := string(fuzzClaims())
		if !strings.Contains(p, old) {
			t.Fatalf("%q not in %s", old, p)
		}
		return []byte(strings.Replace(p, old, repl, 1))
	}
	for _, tc := range []struct {
		name    string
		payload []byte
		want    error
	}{
		{"plain", fuzzClaims(), nil},
		{"nbf in the past", fuzzClaims("nbf", now-600), nil},
		{"nbf within the leeway", fuzzClaims("nbf", now+30), nil},
		{"nbf past the leeway", fuzzClaims("nbf", now+31), accesstoken.ErrNotYet},
		{"nbf an hour ahead", fuzzClaims("nbf", now+3600), accesstoken.ErrNotYet},
		{"nbf not a number", fuzzClaims("nbf", "now"), accesstoken.ErrClaims},
		{"scope twice", with(`"scope":`, `"scope":"patients.read","scope":`), accesstoken.ErrClaims},
		{"SCOPE beside scope", with(`"scope":`, `"SCOPE":"patients.read","scope":`), accesstoken.ErrClaims},
		{"Scope alone", with(`"scope":`, `"Scope":`), accesstoken.ErrClaims},
		{"long s (U+017F) beside scope", with(`"scope":`, `"\u017fcope":"patients.read","scope":`), accesstoken.ErrClaims},
		{"Kelvin sign beside kid-like claim", with(`"scope":`, `"x\u212a":1,"xk":2,"scope":`), accesstoken.ErrClaims},
		{"unknown claim twice", with(`"scope":`, `"x":1,"x":1,"scope":`), accesstoken.ErrClaims},
		{"33 members", with(`"scope":`, manyMembers(24)+`"scope":`), accesstoken.ErrClaims},
		{"32 members", with(`"scope":`, manyMembers(23)+`"scope":`), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.verifier.Verify(w.sign(t, accesstoken.AlgEdDSA, hdr, tc.payload))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}

	// Header members: jws.Sign writes one of each, so these headers are
	// written by hand and signed over as sent.
	for _, tc := range []struct{ name, header string }{
		{"kid twice", `{"alg":"EdDSA","typ":"at+jwt","kid":"unknown","kid":"` + kid + `"}`},
		{"KID beside kid", `{"alg":"EdDSA","typ":"at+jwt","KID":"unknown","kid":"` + kid + `"}`},
		{"alg twice", `{"alg":"none","alg":"EdDSA","typ":"at+jwt","kid":"` + kid + `"}`},
		{"Typ alone", `{"alg":"EdDSA","Typ":"at+jwt","kid":"` + kid + `"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := w.signRawHeader(t, tc.header, fuzzClaims())
			if _, err := w.verifier.Verify(tok); !errors.Is(err, accesstoken.ErrHeader) {
				t.Errorf("Verify = %v, want ErrHeader", err)
			}
		})
	}
	// The same hand-written header, members once: accepted (the check
	// above is what refused, not the hand signing).
	tok := w.signRawHeader(t, `{"alg":"EdDSA","typ":"at+jwt","kid":"`+kid+`"}`, fuzzClaims())
	if _, err := w.verifier.Verify(tok); err != nil {
		t.Errorf("hand-signed good token: %v", err)
	}
}

// signRawHeader signs payload with the world's Ed25519 key under header
// exactly as given (RFC 7515 section 5.1: the signing input is the two
// encoded segments).
func (w *fuzzWorld) signRawHeader(t testing.TB, header string, payload []byte) string {
	t.Helper()
	input := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString(payload)
	sig := ed25519.Sign(w.edRaw, []byte(input))
	return accesstoken.Prefix + input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// manyMembers is n distinct unknown members, each followed by a comma.
func manyMembers(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`"m` + string(rune('a'+i/26)) + string(rune('a'+i%26)) + `":0,`)
	}
	return b.String()
}
