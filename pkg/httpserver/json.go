package httpserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// JSONConfig describes one surface's JSON answers.
type JSONConfig struct {
	// ContentType is the Content-Type of every answer
	// ("application/json; charset=utf-8", "application/problem+json").
	ContentType string
	// EscapeHTML escapes '<', '>' and '&' in strings as \u003c, \u003e and
	// \u0026, as json.Marshal does (the token service and the admin API).
	// Without it they are written as they are (json.Encoder with
	// SetEscapeHTML(false): the resource server, {"detail"} bodies): a JSON
	// API is not embedded in HTML, and "<ACCESS_TOKEN>" reads as written.
	EscapeHTML bool
	// Header holds the fields every answer carries besides Content-Type
	// and Content-Length (Cache-Control: no-store). Read-only.
	Header http.Header
	// Internal is the body of the 500 answered when a value cannot be
	// encoded, in the surface's own error format. A surface encodes only
	// its own plain types, so it is never expected; without it the 500 has
	// an empty body.
	Internal string
}

// JSONFormat writes one surface's JSON answers (NewJSONFormat). It is the
// one writer of JSON answers of every surface, the token service's OAuth
// errors (RFC 6749 section 5.2), the admin API's problems (RFC 9457) and
// {"detail"} bodies (WriteDetail) included, and the one place that sets
// their Content-Type, Content-Length and fixed fields. It is safe for
// concurrent use.
//
// The header values it sets are shared by every answer (the configured
// fields' slices, Content-Type's): net/http copies the handler's header
// when the status is written (response.WriteHeader), and nothing here
// edits a value in place, so a map and slices made per answer, as
// http.Header.Set makes them, would buy nothing (BenchmarkTokenEndpoint).
type JSONFormat struct {
	contentType []string
	escapeHTML  bool
	header      http.Header
	internal    []byte
}

// NewJSONFormat returns the writer of the answers cfg describes.
func NewJSONFormat(cfg JSONConfig) *JSONFormat {
	return &JSONFormat{contentType: []string{cfg.ContentType}, escapeHTML: cfg.EscapeHTML,
		header: cfg.Header, internal: []byte(cfg.Internal)}
}

// Write answers status with v encoded by encoding/json (as json.Marshal
// writes it, or without HTML escaping: JSONConfig.EscapeHTML), and with
// header's fields. header is read, never kept nor edited; its keys must be
// in canonical form ("Retry-After").
func (f *JSONFormat) Write(w http.ResponseWriter, status int, header http.Header, v any) {
	b := jsonBuffers.Get().(*jsonBuffer)
	defer b.release()
	b.enc.SetEscapeHTML(f.escapeHTML)
	if err := b.enc.Encode(v); err != nil {
		f.WriteBody(w, http.StatusInternalServerError, nil, f.internal)
		return
	}
	f.WriteBody(w, status, header, b.b[:len(b.b)-1]) // less Encode's newline
}

// WriteText answers, as Write does, the JSON text appendJSON appends to a
// pooled buffer: for the answers written by hand (package jsontext says
// why), which must be byte for byte what Write would write of their
// value. appendJSON is not kept, so neither it nor the value it writes is
// allocated on the heap.
func (f *JSONFormat) WriteText(w http.ResponseWriter, status int, header http.Header, appendJSON func(b []byte) []byte) {
	b := jsonBuffers.Get().(*jsonBuffer)
	defer b.release()
	b.b = appendJSON(b.b[:0])
	f.WriteBody(w, status, header, b.b)
}

// WriteBody answers body, a JSON text already encoded as Write would
// encode it (an answer kept for a replay), with status and header's
// fields.
func (f *JSONFormat) WriteBody(w http.ResponseWriter, status int, header http.Header, body []byte) {
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	for k, vs := range f.header {
		h[k] = vs
	}
	h["Content-Type"] = f.contentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body) // Write copies body into the connection's buffer
}

// jsonBuffer is a pooled buffer and the encoder that writes into it.
//
// Pooled because every API call is answered through it: a new encoder and
// its buffer's growth cost two allocations and 370 bytes per GET
// /api/v1/me/ (BenchmarkMe), json.Marshal's result one per token error.
type jsonBuffer struct {
	b   []byte
	enc *json.Encoder
}

// Write appends p: the encoder's one write per Encode.
func (b *jsonBuffer) Write(p []byte) (int, error) {
	b.b = append(b.b, p...)
	return len(p), nil
}

// maxPooledJSON bounds the buffers kept in the pool: the answers of every
// request are under 1 KiB; a larger one (a JWK set, the admin API's
// OpenAPI document) is left to the collector.
const maxPooledJSON = 4 << 10

var jsonBuffers = sync.Pool{New: func() any {
	b := &jsonBuffer{b: make([]byte, 0, 1<<10)}
	b.enc = json.NewEncoder(b)
	return b
}}

func (b *jsonBuffer) release() {
	if cap(b.b) > maxPooledJSON {
		return
	}
	b.b = b.b[:0]
	jsonBuffers.Put(b)
}
