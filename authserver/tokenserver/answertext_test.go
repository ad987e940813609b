package tokenserver

import (
	"testing"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/jsontext/jsontexttest"
)

// checkAnswerText fails t unless the answers written by hand (the token's,
// introspection's for a bearer and a bound token, the inactive one) are
// json.Marshal's text of the same values, after what the buffer held.
func checkAnswerText(t *testing.T, s string, n int64) {
	t.Helper()
	tok := tokenResponse{AccessToken: s, ExpiresIn: n, Scope: s, TokenType: s}
	if got, want := string(tok.appendJSON([]byte("x"))), "x"+jsontexttest.Marshaled(t, tok); got != want {
		t.Errorf("token answer:\n got %s\nwant %s", got, want)
	}
	in := Introspection{Active: true, Scope: s, ClientID: s, TokenType: s, Exp: n, Iat: -n, Sub: s, Aud: s, Iss: s, Jti: s}
	for _, cnf := range []*accesstoken.Confirmation{nil, {JKT: s}} {
		in.Cnf = cnf
		if got, want := string(in.appendJSON([]byte("x"))), "x"+jsontexttest.Marshaled(t, in); got != want {
			t.Errorf("introspection:\n got %s\nwant %s", got, want)
		}
	}
	in = Introspection{}
	if got, want := string(in.appendJSON(nil)), jsontexttest.Marshaled(t, in); got != want {
		t.Errorf("introspection of zero values:\n got %s\nwant %s", got, want)
	}
	if got, want := string(appendInactive([]byte("x"))), "x"+jsontexttest.Marshaled(t, map[string]bool{"active": false}); got != want {
		t.Errorf("inactive: got %s, want %s", got, want)
	}
}

// answerTextCases are strings json.Marshal escapes, or must not.
var answerTextCases = []string{
	"", "svc_at_eyJhbGciOiJFUzI1NiJ9.e30.sig-_", "patients:read referrals:write", "Bearer",
	"https://auth.example/?a=1&b=<2>", "\"\\\b\f\n\r\t\x00\x1f\x7f", "日本 \u2028 \u2029 \xff",
}

// TestAnswerText: the token's and introspection's answers as written by
// hand are byte for byte json.Marshal's (answers.Write's until then).
func TestAnswerText(t *testing.T) {
	for _, s := range answerTextCases {
		checkAnswerText(t, s, 3600)
	}
}

// FuzzAnswerText: the same, whatever the strings and numbers.
func FuzzAnswerText(f *testing.F) {
	for _, s := range answerTextCases {
		f.Add(s, int64(300))
	}
	f.Fuzz(checkAnswerText)
}
