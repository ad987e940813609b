package httpserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/jsontext/jsontexttest"
)

// jsonTextCases are strings encoding/json escapes, or must not.
var jsonTextCases = []string{
	"", "plain", "Bearer <ACCESS_TOKEN> & more", "\"\\\b\f\n\r\t\x00\x1f\x7f", "日本 \u2028 \u2029 \xff",
}

// TestJSONFormat: Write answers encoding/json's text of the value, HTML
// escaped as json.Marshal writes it or not as configured, with the
// format's Content-Type, the exact Content-Length, the format's fixed
// fields and the answer's own; WriteText and WriteBody answer their text
// with the same fields.
func TestJSONFormat(t *testing.T) {
	fixed := http.Header{"Cache-Control": {"no-store"}}
	marshaled := httpserver.NewJSONFormat(httpserver.JSONConfig{ContentType: "application/problem+json", EscapeHTML: true, Header: fixed})
	encoded := httpserver.NewJSONFormat(httpserver.JSONConfig{ContentType: "application/json; charset=utf-8"})
	type body struct {
		Detail string            `json:"detail"`
		More   map[string]string `json:"more,omitempty"`
	}
	check := func(name string, rec *httptest.ResponseRecorder, status int, contentType, want string, header map[string]string) {
		t.Helper()
		if rec.Code != status || rec.Body.String() != want {
			t.Errorf("%s: %d %q, want %d %q", name, rec.Code, rec.Body, status, want)
		}
		header["Content-Type"] = contentType
		header["Content-Length"] = strconv.Itoa(len(want))
		if len(rec.Header()) != len(header) {
			t.Errorf("%s: header %v, want %v", name, rec.Header(), header)
		}
		for k, v := range header {
			if got := rec.Header().Values(k); len(got) != 1 || got[0] != v {
				t.Errorf("%s: %s %q, want %q", name, k, got, v)
			}
		}
	}
	for _, s := range jsonTextCases {
		v := body{Detail: s, More: map[string]string{"b": s, "a": "<&>"}}
		rec := httptest.NewRecorder()
		marshaled.Write(rec, http.StatusConflict, http.Header{"Retry-After": {"5"}}, v)
		check("marshaled "+strconv.Quote(s), rec, http.StatusConflict, "application/problem+json", jsontexttest.Marshaled(t, v),
			map[string]string{"Cache-Control": "no-store", "Retry-After": "5"})

		rec = httptest.NewRecorder()
		encoded.Write(rec, http.StatusOK, nil, v)
		check("encoded "+strconv.Quote(s), rec, http.StatusOK, "application/json; charset=utf-8", jsontexttest.Encoded(t, v), map[string]string{})

		rec = httptest.NewRecorder()
		text := jsontexttest.Encoded(t, v)
		encoded.WriteText(rec, http.StatusCreated, http.Header{"Location": {"/x"}}, func(b []byte) []byte { return append(b, text...) })
		check("text "+strconv.Quote(s), rec, http.StatusCreated, "application/json; charset=utf-8", text, map[string]string{"Location": "/x"})

		rec = httptest.NewRecorder()
		marshaled.WriteBody(rec, http.StatusAccepted, nil, []byte(text))
		check("body "+strconv.Quote(s), rec, http.StatusAccepted, "application/problem+json", text, map[string]string{"Cache-Control": "no-store"})
	}
	// A body larger than the pooled buffers, then a small one: the pool
	// hands out no buffer that still holds the large one.
	large := strings.Repeat("x", 64<<10)
	for _, s := range []string{large, "small"} {
		rec := httptest.NewRecorder()
		encoded.Write(rec, http.StatusOK, nil, body{Detail: s})
		check("size "+strconv.Itoa(len(s)), rec, http.StatusOK, "application/json; charset=utf-8", `{"detail":"`+s+`"}`, map[string]string{})
	}
	if len(fixed) != 1 || fixed.Get("Cache-Control") != "no-store" {
		t.Errorf("the format's fields were edited: %v", fixed)
	}
}

// TestJSONFormatInternal: a value encoding/json refuses is answered 500
// with the format's own internal error body, never a partial text.
func TestJSONFormatInternal(t *testing.T) {
	f := httpserver.NewJSONFormat(httpserver.JSONConfig{ContentType: "application/json; charset=utf-8", Internal: `{"detail":"internal error"}`})
	for _, v := range []any{json.RawMessage(`{"open":`), map[string]any{"f": func() {}}} {
		rec := httptest.NewRecorder()
		f.Write(rec, http.StatusOK, http.Header{"Retry-After": {"5"}}, v)
		if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"detail":"internal error"}` ||
			rec.Header().Get("Content-Length") != "27" || rec.Header().Get("Retry-After") != "" {
			t.Errorf("%T: %d %v %q", v, rec.Code, rec.Header(), rec.Body)
		}
	}
}

// TestWriteDetailText: {"detail"} bodies are encoding/json's text without
// HTML escaping, whatever the detail.
func TestWriteDetailText(t *testing.T) {
	for _, s := range jsonTextCases {
		rec := httptest.NewRecorder()
		httpserver.WriteDetail(rec, http.StatusNotFound, nil, s)
		if want := jsontexttest.Encoded(t, map[string]string{"detail": s}); rec.Body.String() != want {
			t.Errorf("%q: %s, want %s", s, rec.Body, want)
		}
	}
}
