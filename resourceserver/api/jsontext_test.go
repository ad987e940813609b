package api

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodingJSON is what writeJSON's encoder writes of v: encoding/json
// without HTML escaping, its newline trimmed.
func encodingJSON(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// jsonTextCases are strings encoding/json escapes, or must not.
var jsonTextCases = []string{
	"", "plain", `quote " and backslash \`, "<ACCESS_TOKEN> & 'x'",
	"\b\f\n\r\t", "\x00\x01\x1f\x7f", "é ü ß 日本 🏥",
	"\u2028 and \u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", "/slash/",
}

// TestJSONText: GET /api/v1/me/'s body as written by hand (appendJSON) is
// byte for byte encoding/json's, for strings that need escaping and for
// scopes none, empty and several; and writeJSON writes it so.
func TestJSONText(t *testing.T) {
	for _, s := range jsonTextCases {
		if got, want := string(appendJSONString(nil, s)), encodingJSON(t, s); got != want {
			t.Errorf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
	}
	for _, scopes := range [][]string{nil, {}, {"partner:read"}, {"a", "b\n", "c\"d"}} {
		d := clientDescription{
			APIVersion: APIVersion, ClientID: "svc_c_\x01", Name: "Ward <7> \"north\"", Audience: "partner",
			Organization: organization{Name: "St. Mary's \u2028", Slug: "st-marys"}, Environment: "sandbox",
			Scopes: scopes, TokenExpiresAt: "2026-11-29T22:00:00Z", RateLimitPerMinute: -12,
		}
		if got, want := string(d.appendJSON(nil)), encodingJSON(t, d); got != want {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// FuzzJSONText: appendJSONString and appendJSON agree with encoding/json
// on any string.
func FuzzJSONText(f *testing.F) {
	for _, s := range jsonTextCases {
		f.Add(s, int64(600))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if got, want := string(appendJSONString(nil, s)), encodingJSON(t, s); got != want {
			t.Fatalf("appendJSONString(%q) = %s, want %s", s, got, want)
		}
		d := clientDescription{APIVersion: s, ClientID: s, Name: s, Audience: s, Organization: organization{Name: s, Slug: s},
			Environment: s, Scopes: []string{s, s}, TokenExpiresAt: s, RateLimitPerMinute: n}
		if got, want := string(d.appendJSON([]byte("prefix"))), "prefix"+encodingJSON(t, d); got != want {
			t.Fatalf("appendJSON:\n got %s\nwant %s", got, want)
		}
	})
}
