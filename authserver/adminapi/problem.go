package adminapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

// problem is an RFC 9457 problem details object. Type is always
// "about:blank" (section 4.2.1: the title is then the status's phrase);
// Code is this API's machine-readable reason, an extension member.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Code      string `json:"code"`
	RequestID string `json:"request_id,omitempty"`
	// header is written with the answer (Retry-After, WWW-Authenticate,
	// Allow).
	header http.Header
}

func (p *problem) Error() string { return p.Code + ": " + p.Detail }

func newProblem(status int, code, detail string) *problem {
	return &problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

func (p *problem) with(name, value string) *problem {
	if p.header == nil {
		p.header = http.Header{}
	}
	p.header.Set(name, value)
	return p
}

// Problems of the API itself.
var (
	errNotFoundRoute = func() *problem { return newProblem(http.StatusNotFound, "not_found", "no such resource") }
	errMediaType     = func() *problem {
		return newProblem(http.StatusUnsupportedMediaType, "unsupported_media_type", "the body must be a JSON object (Content-Type: application/json)")
	}
)

func invalid(detail string) *problem {
	return newProblem(http.StatusBadRequest, "invalid_request", detail)
}

// problemOf maps an error to the problem answered, in one place: the
// registry's and the operations' errors by identity, anything else (Redis
// down) a 503 whose detail never echoes the internal error.
func problemOf(err error) *problem {
	var p *problem
	switch {
	case errors.As(err, &p):
		return p
	case errors.Is(err, operations.ErrSigningKey):
		return newProblem(http.StatusConflict, "signing_key", err.Error())
	case errors.Is(err, clients.ErrInvalid):
		return newProblem(http.StatusBadRequest, "invalid_input", err.Error())
	case errors.Is(err, clients.ErrNotFound):
		return newProblem(http.StatusNotFound, "not_found", err.Error())
	case errors.Is(err, clients.ErrExists):
		return newProblem(http.StatusConflict, "exists", err.Error())
	case errors.Is(err, clients.ErrConflict):
		return newProblem(http.StatusConflict, "conflict", strings.TrimPrefix(err.Error(), clients.ErrConflict.Error()+": "))
	case errors.Is(err, clients.ErrRevoked):
		return newProblem(http.StatusConflict, "revoked", err.Error()+": a revoked client cannot be changed")
	case errors.Is(err, redisconn.ErrPrimaryMoved):
		return newProblem(http.StatusServiceUnavailable, "failover", "the Redis primary moved during the change and a second try failed; retry after Retry-After seconds").with("Retry-After", "5")
	default:
		return newProblem(http.StatusServiceUnavailable, "unavailable", "the registry is unavailable; retry after Retry-After seconds").with("Retry-After", "5")
	}
}

// writeProblem answers p; 5xx causes are logged (never sent).
func writeProblem(w http.ResponseWriter, r *http.Request, log *slog.Logger, p *problem, cause error) {
	if p.Status >= 500 && cause != nil {
		log.ErrorContext(r.Context(), "admin api", "status", p.Status, "err", cause)
	}
	p.RequestID = logging.RequestID(r.Context())
	for k, v := range p.header {
		w.Header()[k] = v
	}
	writeBody(w, p.Status, "application/problem+json", p)
}

func writeBody(w http.ResponseWriter, status int, contentType string, v any) {
	body, err := json.Marshal(v)
	if err != nil { // our own types: cannot happen
		status, body = http.StatusInternalServerError, []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"internal error","code":"internal"}`)
		contentType = "application/problem+json"
	}
	writeRaw(w, status, contentType, body)
}

func writeRaw(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
