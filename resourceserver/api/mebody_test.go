package api

import (
	"testing"

	"github.com/partnerapi/authplatform/pkg/jsontext/jsontexttest"
)

// TestMeBody: GET /api/v1/me/'s body as written by hand
// (clientDescription.appendJSON) is byte for byte encoding/json's, with
// strings that need escaping and scopes none, empty and several.
func TestMeBody(t *testing.T) {
	for _, scopes := range [][]string{nil, {}, {"partner:read"}, {"a", "b\n", "c\"d"}} {
		d := clientDescription{
			APIVersion: APIVersion, ClientID: "svc_c_\x01", Name: "Ward <7> \"north\" \xff", Audience: "partner",
			Organization: organization{Name: "St. Mary's \u2028", Slug: "st-marys"}, Environment: "sandbox",
			Scopes: scopes, TokenExpiresAt: "2026-11-29T22:00:00Z", RateLimitPerMinute: -12,
		}
		if got, want := string(d.appendJSON(nil)), jsontexttest.Encoded(t, d); got != want {
			t.Errorf("appendJSON:\n got %s\nwant %s", got, want)
		}
	}
}

// FuzzMeBody: appendJSON agrees with encoding/json whatever the strings
// and the limit.
func FuzzMeBody(f *testing.F) {
	for _, s := range []string{"", "plain", "\"\\\b\f\n\r\t\x00\x1f", "日本 \u2028 \xff"} {
		f.Add(s, int64(600))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		d := clientDescription{APIVersion: s, ClientID: s, Name: s, Audience: s, Organization: organization{Name: s, Slug: s},
			Environment: s, Scopes: []string{s, s}, TokenExpiresAt: s, RateLimitPerMinute: n}
		if got, want := string(d.appendJSON([]byte("prefix"))), "prefix"+jsontexttest.Encoded(t, d); got != want {
			t.Fatalf("appendJSON:\n got %s\nwant %s", got, want)
		}
	})
}
