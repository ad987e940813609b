package jsontext_test

import (
	"testing"

	"github.com/partnerapi/authplatform/pkg/jsontext"
	"github.com/partnerapi/authplatform/pkg/jsontext/jsontexttest"
)

// cases are strings encoding/json escapes, or must leave as they are.
var cases = []string{
	"", "plain", `quote " and backslash \`, "<ACCESS_TOKEN> & 'x' >",
	"\b\f\n\r\t", "\x00\x01\x1f\x7f", "é ü ß 日本 🏥",
	"\u2028 and \u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", "/slash/",
}

// TestAppendString: AppendString writes what encoding/json writes without
// HTML escaping, AppendHTMLString what json.Marshal writes, after what b
// already holds.
func TestAppendString(t *testing.T) {
	for _, s := range cases {
		if got, want := string(jsontext.AppendString([]byte("x:"), s)), "x:"+jsontexttest.Encoded(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if got, want := string(jsontext.AppendHTMLString([]byte("x:"), s)), "x:"+jsontexttest.Marshaled(t, s); got != want {
			t.Errorf("AppendHTMLString(%q) = %s, want %s", s, got, want)
		}
	}
}

// FuzzAppendString: AppendString agrees with encoding/json on any string.
func FuzzAppendString(f *testing.F) {
	for _, s := range cases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(jsontext.AppendString(nil, s)), jsontexttest.Encoded(t, s); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if got, want := string(jsontext.AppendHTMLString(nil, s)), jsontexttest.Marshaled(t, s); got != want {
			t.Fatalf("AppendHTMLString(%q) = %s, want %s", s, got, want)
		}
	})
}
