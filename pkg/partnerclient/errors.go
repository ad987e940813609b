package partnerclient

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// TokenError is an error answer of the token endpoint (RFC 6749 section
// 5.2) or of the revocation endpoint (RFC 7009 section 2.2.1), or a token
// response that could not be used, or a request that could not be sent.
type TokenError struct {
	// StatusCode is the HTTP status (0 when no answer was received).
	StatusCode int
	// Code is the OAuth "error", such as "invalid_client" or "slow_down"
	// (empty when the body was not an OAuth error).
	Code string
	// Description is the OAuth "error_description".
	Description string
	// RetryAfter is the wait the server asked for (0: none).
	RetryAfter time.Duration
	// Err is the underlying failure, if any (a connection error, a context
	// error, an unreadable body, a failure to sign the client assertion).
	Err error

	revocation bool // from the revocation endpoint (RFC 7009), not the token endpoint
	final      bool // no retry can help: the client assertion could not be signed
	nonce      bool // the answer carried a DPoP-Nonce (RFC 9449 section 8)
}

func (e *TokenError) Error() string {
	var b strings.Builder
	if e.revocation {
		b.WriteString("partnerclient: revocation request failed")
	} else {
		b.WriteString("partnerclient: token request failed")
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": %d", e.StatusCode)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Description != "" {
		fmt.Fprintf(&b, ": %s", e.Description)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *TokenError) Unwrap() error { return e.Err }

// APIError is a non-2xx answer of the API: its status, the "detail" of its
// body and its Retry-After.
type APIError struct {
	StatusCode int
	// Detail is the body's "detail" (empty if the body had none).
	Detail string
	// RetryAfter is the wait the server asked for (0: none).
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("partnerclient: API answered %d", e.StatusCode)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return s
}

// maxErrorBody bounds how much of an error body is read.
const maxErrorBody = 64 << 10

// CheckResponse returns nil for a 2xx answer and an *APIError otherwise,
// reading (and closing) the body of a non-2xx answer.
func CheckResponse(resp *http.Response) error { return checkResponse(resp, time.Now) }

func checkResponse(resp *http.Response, now func() time.Time) error {
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Detail string `json:"detail"`
	}
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = json.Unmarshal(data, &body)
	return &APIError{StatusCode: resp.StatusCode, Detail: body.Detail, RetryAfter: retryAfter(resp.Header, now)}
}

// retryAfter reads Retry-After (RFC 9110 section 10.2.3): delay-seconds or
// an HTTP-date, relative to now. Absent, malformed or in the past: 0.
func retryAfter(h http.Header, now func() time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now()); d > 0 {
			return d
		}
	}
	return 0
}
