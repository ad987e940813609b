package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
)

// bearerRequest is what a request says about its credentials, parsed once.
type bearerRequest struct {
	// Token is the bearer token of the Authorization header.
	Token string
}

// parseBearer reads the request's access token from its one Authorization
// header (RFC 6750 section 2.1):
//
//	credentials = "Bearer" 1*SP b64token
//	b64token    = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
//
// The scheme is matched case-insensitively (RFC 9110 section 11.1). No
// header, or another scheme, is errNoToken: the client did not try bearer
// authentication. A Bearer header whose token is missing, longer than
// accesstoken.MaxTokenLength or not one b64token is errInvalidToken. Two
// Authorization headers, or an access_token query parameter (RFC 6750
// section 2.3, which this server does not accept: URIs end up in logs), are
// errInvalidRequest (RFC 6750 section 3.1). The header itself is read by
// accesstoken.BearerToken, as the admin API reads it.
func parseBearer(r *http.Request) (bearerRequest, error) {
	if strings.Contains(r.URL.RawQuery, "access_token") {
		if q, err := url.ParseQuery(r.URL.RawQuery); err != nil || q.Has("access_token") {
			return bearerRequest{}, fmt.Errorf("%w: access_token in the query", errInvalidRequest)
		}
	}
	token, err := accesstoken.BearerToken(r.Header["Authorization"])
	switch {
	case errors.Is(err, accesstoken.ErrNoBearer):
		return bearerRequest{}, errNoToken
	case errors.Is(err, accesstoken.ErrMalformedRequest):
		return bearerRequest{}, fmt.Errorf("%w: %w", errInvalidRequest, err)
	case err != nil:
		return bearerRequest{}, fmt.Errorf("%w: %w", errInvalidToken, err)
	}
	return bearerRequest{Token: token}, nil
}
