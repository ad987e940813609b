package jsontext_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/partnerapi/authplatform/pkg/jsontext"
)

// encoded is encoding/json's text of v without HTML escaping (its
// newline trimmed).
func encoded(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// cases are strings encoding/json escapes, or must leave as they are.
var cases = []string{
	"", "plain", `quote " and backslash \`, "<ACCESS_TOKEN> & 'x' >",
	"\b\f\n\r\t", "\x00\x01\x1f\x7f", "é ü ß 日本 🏥",
	"\u2028 and \u2029", "bad \xff utf-8 \xc3", "\xed\xa0\x80 surrogate", "/slash/",
}

// marshaled is json.Marshal's text of v (HTML escaped).
func marshaled(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAppendString: AppendString writes what encoding/json writes without
// HTML escaping, AppendHTMLString what json.Marshal writes, after what b
// already holds.
func TestAppendString(t *testing.T) {
	for _, s := range cases {
		if got, want := string(jsontext.AppendString([]byte("x:"), s)), "x:"+encoded(t, s); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if got, want := string(jsontext.AppendHTMLString([]byte("x:"), s)), "x:"+marshaled(t, s); got != want {
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
		if got, want := string(jsontext.AppendString(nil, s)), encoded(t, s); got != want {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
		if got, want := string(jsontext.AppendHTMLString(nil, s)), marshaled(t, s); got != want {
			t.Fatalf("AppendHTMLString(%q) = %s, want %s", s, got, want)
		}
	})
}
