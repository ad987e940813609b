package api

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// problem is a failure the client is told about: the status, the detail it
// reads and the headers the status calls for. What caused it stays in the
// error chain it is wrapped in (fmt.Errorf("%w: %w", errInvalidToken, cause)),
// for the logs only: a client never reads the text of a cause.
type problem struct {
	status int
	detail string
	// challenge is the WWW-Authenticate value (RFC 6750 section 3,
	// RFC 9110 section 11.6.1), if any.
	challenge string
	// retryAfter is the Retry-After value in seconds (RFC 9110 section
	// 10.2.3), if any.
	retryAfter string
	// invalidToken: counted as a refused token (metrics.go), as
	// errInvalidToken and its DPoP forms are.
	invalidToken bool
}

func (p *problem) Error() string { return p.detail }

// realm is the protection space of every bearer challenge.
const realm = `Bearer realm="api"`

// The problems of this server. Their detail texts are the only error texts a
// client ever reads.
var (
	// RFC 6750 section 3.1: a request without any authentication, or with
	// another scheme, gets a challenge without an error code.
	errNoToken = &problem{
		status:    http.StatusUnauthorized,
		detail:    "authentication required: send Authorization: Bearer <ACCESS_TOKEN>",
		challenge: realm,
	}
	// A token that is malformed, badly signed, expired, rotated, revoked or
	// for someone else: one answer for all (RFC 6750 section 3.1,
	// invalid_token).
	errInvalidToken = &problem{
		status:    http.StatusUnauthorized,
		detail:    "invalid, expired or revoked access token",
		challenge: realm + `, error="invalid_token"`,

		invalidToken: true,
	}
	// RFC 8705 section 3: a certificate-bound token over a connection
	// without its client certificate (or with another): invalid_token,
	// with words that say what to do.
	errWrongCertificate = &problem{
		status:    http.StatusUnauthorized,
		detail:    "access token is bound to a client certificate: send it over a connection that presents that certificate",
		challenge: realm + `, error="invalid_token"`,

		invalidToken: true,
	}
	// RFC 6750 section 3.1, invalid_request: the token is sent twice or in a
	// way this server does not accept (the URI query, RFC 6750 section 2.3).
	errInvalidRequest = &problem{
		status:    http.StatusBadRequest,
		detail:    "malformed request: send the access token once, in the Authorization header only",
		challenge: realm + `, error="invalid_request"`,
	}
	errRateLimited = &problem{
		status:     http.StatusTooManyRequests,
		detail:     "rate limit exceeded; retry after the time in Retry-After",
		retryAfter: "60", // apidocs/guides/rate-limits.md, Limits
	}
	// errNotFound answers unknown paths and records outside the caller's
	// organisation alike (apidocs/guides/scopes-and-audiences.md, rule 4
	// under Rules).
	errNotFound         = &problem{status: http.StatusNotFound, detail: "not found"}
	errMethodNotAllowed = &problem{status: http.StatusMethodNotAllowed, detail: "method not allowed"}
	errBadFormat        = &problem{status: http.StatusBadRequest, detail: "unsupported format; use format=json"}
	// errUnavailable: Redis (or the key set) cannot be read, so nothing is
	// served (fail closed).
	errUnavailable = &problem{
		status:     http.StatusServiceUnavailable,
		detail:     "service temporarily unavailable",
		retryAfter: "5",
	}
	// The probe's 503s carry Retry-After like every other 503
	// (apidocs/guides/errors.md, Other API errors).
	errRedisNotReady = &problem{status: http.StatusServiceUnavailable, detail: "redis unavailable", retryAfter: "5"}
	errKeysNotReady  = &problem{status: http.StatusServiceUnavailable, detail: "signing keys unavailable", retryAfter: "5"}
	errInternal      = &problem{status: http.StatusInternalServerError, detail: "internal error"}
)

// rateLimited is the 429 of a refused request: Retry-After is the 60 of
// apidocs/guides/rate-limits.md (Limits), the window's length (ratelimit.Decision.RetryAfter): package
// ratelimit admits a request at the latest a window after a refusal, so a
// client that waits Retry-After seconds, having sent nothing since, is
// always admitted.
func rateLimited(d ratelimit.Decision) *problem {
	s := strconv.FormatInt(d.RetryAfter(clients.Window), 10)
	if s == errRateLimited.retryAfter {
		return errRateLimited
	}
	p := *errRateLimited
	p.retryAfter = s
	return &p
}

// problemOf maps any error to what the client is told: a problem in the
// chain as it is, a Redis failure to 503, anything else to 500.
func problemOf(err error) *problem {
	var p *problem
	switch {
	case errors.As(err, &p):
		return p
	case clients.IsUnavailable(err):
		return errUnavailable
	default:
		return errInternal
	}
}

// fail is the one place that answers an error: it answers err and
// aborts the handler chain. Internal errors are logged at error level and
// an unreachable Redis or key set at warning level; refusals only at debug
// level, with their cause.
func (s *server) fail(c *gin.Context, err error) {
	p := problemOf(err)
	s.countRefusal(p, err)
	switch p {
	case errInternal:
		s.logger.LogAttrs(c.Request.Context(), slog.LevelError, "internal error", slog.Any("error", err))
	case errUnavailable, errRedisNotReady, errKeysNotReady:
		// The error names what failed (on a Cluster, the shard).
		s.logger.LogAttrs(c.Request.Context(), slog.LevelWarn, "dependency unavailable", slog.Any("error", err))
	default:
		s.logger.LogAttrs(c.Request.Context(), slog.LevelDebug, "request refused", slog.Int("status", p.status), slog.Any("error", err))
	}
	c.Abort()
	if c.Writer.Written() {
		return // too late to change the answer
	}
	h := c.Writer.Header()
	if p.challenge != "" {
		h.Set("WWW-Authenticate", p.challenge)
	}
	if p.retryAfter != "" {
		h.Set("Retry-After", p.retryAfter)
	}
	// The one writer of {"detail"} bodies (apidocs/guides/errors.md, Other
	// API errors).
	httpserver.WriteDetail(c.Writer, p.status, nil, p.detail)
}

// jsonContentType is the Content-Type of every JSON answer and document.
const jsonContentType = "application/json; charset=utf-8"

// answers writes every JSON answer of this server but the {"detail"}
// errors (httpserver.WriteDetail, fail): without HTML escaping
// (httpserver.JSONConfig.EscapeHTML says why).
var answers = httpserver.NewJSONFormat(httpserver.JSONConfig{ContentType: jsonContentType, Internal: `{"detail":"internal error"}`})

// writeJSON answers v as JSON.
func writeJSON(c *gin.Context, status int, v any) { answers.Write(c.Writer, status, nil, v) }

// writeJSONText answers the JSON text appendJSON appends to a pooled
// buffer: for a body written by hand (GET /api/v1/me/'s,
// clientDescription.appendJSON), byte for byte what writeJSON would write
// of it (httpserver.JSONFormat.WriteText).
func writeJSONText(c *gin.Context, status int, appendJSON func(b []byte) []byte) {
	answers.WriteText(c.Writer, status, nil, appendJSON)
}
