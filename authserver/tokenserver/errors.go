package tokenserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// realm of the WWW-Authenticate challenge on invalid_client (RFC 7617).
const realm = "partner-api"

// unavailableRetryAfter is the Retry-After of a 503 (seconds).
const unavailableRetryAfter = 5

var (
	errTemporarilyUnavailable = &oauthError{Status: http.StatusServiceUnavailable, Code: "temporarily_unavailable",
		Description: "The service cannot reach its state store; retry after the number of seconds in Retry-After"}
	errServer = &oauthError{Status: http.StatusInternalServerError, Code: "server_error",
		Description: "The server encountered an unexpected condition"}
)

// slowDown is a 429: of the per-client token request limit, or (failures)
// of the limits of failed authentications (authenticate.go).
type slowDown struct {
	retryAfter int64
	failures   bool
}

func (e *slowDown) Error() string { return "slow_down" }

// toOAuth maps any error of the token endpoint to what the client sees
// (RFC 6749 section 5.2): this package's own errors as they are; the one
// sentinel go-oauth2's Manager refuses a client with as invalid_client; a
// Redis failure as 503; anything else as a 500 without internals.
func toOAuth(err error) (*oauthError, http.Header) {
	var oe *oauthError
	var sd *slowDown
	switch {
	case err == errNoSigningKey:
		h := http.Header{}
		h.Set("Retry-After", strconv.Itoa(unavailableRetryAfter))
		return errNoSigningKey, h
	case err == errKeysUnavailable:
		h := http.Header{}
		h.Set("Retry-After", strconv.Itoa(int(jwksRetryEvery/time.Second)))
		return errKeysUnavailable, h
	case errors.As(err, &oe):
		return oe, nil
	case errors.As(err, &sd):
		if sd.failures {
			return errTooManyFailures, retryAfterHeader(sd.retryAfter)
		}
		return errSlowDown, retryAfterHeader(sd.retryAfter)
	case clients.IsUnavailable(err) || errors.Is(err, clients.ErrNotReplicated):
		h := http.Header{}
		h.Set("Retry-After", strconv.Itoa(unavailableRetryAfter))
		return errTemporarilyUnavailable, h
	}
	if err == oauthErrors.ErrInvalidClient {
		return errInvalidClient, nil
	}
	return errServer, nil
}

var (
	errSlowDown = &oauthError{Status: http.StatusTooManyRequests, Code: "slow_down",
		Description: "More than the allowed token requests in a minute for this client; retry after the number of seconds in Retry-After"}
	errTooManyFailures = &oauthError{Status: http.StatusTooManyRequests, Code: "slow_down",
		Description: "Too many failed client authentications from this address; retry after the number of seconds in Retry-After"}
	errInvalidClient = &oauthError{Status: http.StatusUnauthorized, Code: "invalid_client", Description: "Client authentication failed"}
	errInvalidScope  = &oauthError{Status: http.StatusBadRequest, Code: "invalid_scope",
		Description: "The requested scope is not held by the client, unknown or malformed"}
	errUnsupportedGrant = &oauthError{Status: http.StatusBadRequest, Code: "unsupported_grant_type",
		Description: "grant_type must be client_credentials"}
)

// writeJSON writes a JSON body with the headers every answer of the token
// service carries, and header's. It is the one place responses are written.
//
// The values of the fixed fields are shared by every answer (the
// *Value variables below; header may be noStoreHeader): net/http copies
// the handler's header when the status is written (response.WriteHeader),
// and nothing here edits a value in place, so a map and slices made per
// answer, as http.Header.Set and noStore made them, bought nothing.
func writeJSON(w http.ResponseWriter, status int, header http.Header, body any) {
	data, err := json.Marshal(body)
	if err != nil { // only this package's own values reach here
		status, data = http.StatusInternalServerError, []byte(`{"error":"server_error","error_description":"The server encountered an unexpected condition"}`)
	}
	writeBody(w, status, header, data)
}

// writeJSONText answers, as writeJSON does, the JSON text appendJSON
// appends to a pooled buffer: for the answers written by hand (the token's
// and introspection's, package jsontext says why), byte for byte what
// json.Marshal would write of them. appendJSON is not kept, so neither it
// nor the value it writes is allocated on the heap.
func writeJSONText(w http.ResponseWriter, status int, header http.Header, appendJSON func(b []byte) []byte) {
	bp := jsonBuffers.Get().(*[]byte)
	data := appendJSON((*bp)[:0])
	writeBody(w, status, header, data) // Write copies data into the connection's buffer
	if cap(data) <= maxPooledJSON {
		*bp = data
		jsonBuffers.Put(bp)
	}
}

// jsonBuffers are writeJSONText's buffers; one larger than maxPooledJSON
// (none of its answers is near) is left to the collector.
var jsonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

const maxPooledJSON = 4 << 10

// writeBody answers data, a JSON text, with status and header's fields.
func writeBody(w http.ResponseWriter, status int, header http.Header, data []byte) {
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	h["Content-Type"] = jsonContentTypeValue
	h["Content-Length"] = []string{strconv.Itoa(len(data))}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// Shared field values (see writeJSON): never edited in place.
var (
	jsonContentTypeValue = []string{"application/json; charset=utf-8"}
	noStoreValue         = []string{"no-store"}
	noCacheValue         = []string{"no-cache"}
)

// noStoreHeader marks a response that carries or concerns credentials as
// uncacheable (RFC 6749 section 5.1). Read-only: writeJSON copies it.
var noStoreHeader = http.Header{"Cache-Control": noStoreValue, "Pragma": noCacheValue}

// writeOAuthError answers err in the OAuth error format (RFC 6749 section
// 5.2). A 401 challenges with Basic (RFC 6749 section 5.2, RFC 7617) unless
// the client authenticated with form fields.
func writeOAuthError(ctx context.Context, log *slog.Logger, w http.ResponseWriter, creds credentials, err error) {
	oe, extra := toOAuth(err)
	if oe == errServer || oe == errTemporarilyUnavailable {
		log.ErrorContext(ctx, "token service error", "err", err)
	}
	h := maps.Clone(noStoreHeader) // its own map: fields are added below
	for k, vs := range extra {
		h[k] = vs
	}
	if oe == errBodyTooLarge {
		h.Set("Connection", "close")
	}
	if oe.Status == http.StatusUnauthorized && (creds.Basic || !creds.Present) {
		h.Set("WWW-Authenticate", `Basic realm="`+realm+`", charset="UTF-8"`)
	}
	writeJSON(w, oe.Status, h, map[string]string{"error": oe.Code, "error_description": oe.Description})
}
