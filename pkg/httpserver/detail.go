package httpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
)

// WriteDetail answers status with the body {"detail": detail} (README:
// error shapes; the resource server's every error, the probes' 503s, a
// recovered panic's 500) and header's fields. It is the one writer of that
// format. HTML is not escaped: a JSON API is not embedded in HTML, and
// "<ACCESS_TOKEN>" reads as written.
func WriteDetail(w http.ResponseWriter, status int, header http.Header, detail string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Detail string `json:"detail"`
	}{detail}) // a string cannot fail to encode
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// DetailMisrouted answers a request no route takes as {"detail"}: "not
// found" or "method not allowed" (the resource server's and the metrics
// listener's format).
func DetailMisrouted(w http.ResponseWriter, _ *http.Request, status int, _ []string) {
	if status == http.StatusMethodNotAllowed {
		WriteDetail(w, status, nil, "method not allowed")
		return
	}
	WriteDetail(w, http.StatusNotFound, nil, "not found")
}
