package jsontexttest

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Encoded is encoding/json's text of v without HTML escaping
// (Encoder.SetEscapeHTML(false)), its trailing newline trimmed: what the
// resource server answers and {"detail"} bodies hold (an
// httpserver.JSONFormat without EscapeHTML).
func Encoded(t testing.TB, v any) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// Marshaled is json.Marshal's text of v (HTML escaped): what the token
// service and the admin API answer (an httpserver.JSONFormat with
// EscapeHTML).
func Marshaled(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
