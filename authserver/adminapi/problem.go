package adminapi

import (
	"errors"
	"log/slog"
	"net/http"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
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
	// errInternal answers an unknown error: what went wrong is logged,
	// never answered.
	errInternal = func() *problem { return newProblem(http.StatusInternalServerError, "internal", "internal error") }
)

func invalid(detail string) *problem {
	return newProblem(http.StatusBadRequest, "invalid_request", detail)
}

// problemOf maps an error to the problem answered, in one place: the
// registry's and the operations' refusals by their kind, in their own
// public words (clients.Error.Public); a known outage of Redis (the
// registry's, clients.IsUnavailable; any other of the Redis calls here,
// redisconn.Unreachable; replicas that did not confirm a change which has
// nothing to show) 503 with Retry-After; anything else 500, its cause in
// the log only (writeProblem), never in the answer.
func problemOf(err error) *problem {
	var p *problem
	var refusal *clients.Error
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &refusal):
		return refusalProblem(refusal)
	case errors.Is(err, redisconn.ErrPrimaryMoved):
		return newProblem(http.StatusServiceUnavailable, "failover", "the Redis primary moved during the change and a second try failed; retry after Retry-After seconds").with("Retry-After", "5")
	case clients.IsUnavailable(err) || redisconn.Unreachable(err) || errors.Is(err, clients.ErrNotReplicated) || errors.Is(err, keywithdrawal.ErrNotReplicated):
		return newProblem(http.StatusServiceUnavailable, "unavailable", "the registry is unavailable; retry after Retry-After seconds").with("Retry-After", "5")
	default:
		return errInternal()
	}
}

// refusalProblem is the problem of a refusal, by its kind.
func refusalProblem(r *clients.Error) *problem {
	status, code := http.StatusBadRequest, "invalid_input"
	switch {
	case error(r) == operations.ErrSigningKey:
		status, code = http.StatusConflict, "signing_key"
	case r.Kind == clients.ErrNotFound:
		status, code = http.StatusNotFound, "not_found"
	case r.Kind == clients.ErrExists:
		status, code = http.StatusConflict, "exists"
	case r.Kind == clients.ErrConflict:
		status, code = http.StatusConflict, "conflict"
	case r.Kind == clients.ErrRevoked:
		status, code = http.StatusConflict, "revoked"
	}
	return newProblem(status, code, r.Public())
}

// writeProblem answers p; 5xx causes are logged (never sent).
func writeProblem(w http.ResponseWriter, r *http.Request, log *slog.Logger, p *problem, cause error) {
	if p.Status >= 500 && cause != nil {
		log.ErrorContext(r.Context(), "admin api", "status", p.Status, "err", cause)
	}
	p.RequestID = logging.RequestID(r.Context())
	problems.Write(w, p.Status, p.header, p)
}

// The formats of the admin API's answers: json.Marshal's text (HTML
// escaped), never cached (credentials and the registry's state).
var (
	noStore = http.Header{"Cache-Control": {"no-store"}}
	// problems writes every problem (RFC 9457 section 3).
	problems = httpserver.NewJSONFormat(httpserver.JSONConfig{ContentType: "application/problem+json", EscapeHTML: true, Header: noStore,
		Internal: `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"internal error","code":"internal"}`})
	// results writes every other answer, rendered beforehand (render) so
	// that an idempotent request can replay it.
	results = httpserver.NewJSONFormat(httpserver.JSONConfig{ContentType: "application/json", EscapeHTML: true, Header: noStore})
)
