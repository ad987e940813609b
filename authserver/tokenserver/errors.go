package tokenserver

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"time"

	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
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

// answers writes every answer of the token service: json.Marshal's text
// (HTML escaped) as application/json, the headers each answer needs
// passed with it (noStoreHeader).
var answers = httpserver.NewJSONFormat(httpserver.JSONConfig{ContentType: "application/json; charset=utf-8", EscapeHTML: true,
	Internal: `{"error":"server_error","error_description":"The server encountered an unexpected condition"}`})

// Shared field values: never edited in place (httpserver.JSONFormat says
// why they may be shared).
var (
	noStoreValue = []string{"no-store"}
	noCacheValue = []string{"no-cache"}
)

// noStoreHeader marks a response that carries or concerns credentials as
// uncacheable (RFC 6749 section 5.1). Read-only: answers copies it.
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
	answers.Write(w, oe.Status, h, map[string]string{"error": oe.Code, "error_description": oe.Description})
}
