package api

import (
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
// errInvalidRequest (RFC 6750 section 3.1).
func parseBearer(r *http.Request) (bearerRequest, error) {
	if strings.Contains(r.URL.RawQuery, "access_token") {
		if q, err := url.ParseQuery(r.URL.RawQuery); err != nil || q.Has("access_token") {
			return bearerRequest{}, fmt.Errorf("%w: access_token in the query", errInvalidRequest)
		}
	}
	values := r.Header["Authorization"]
	switch len(values) {
	case 0:
		return bearerRequest{}, errNoToken
	case 1:
	default:
		return bearerRequest{}, fmt.Errorf("%w: %d Authorization headers", errInvalidRequest, len(values))
	}
	scheme, rest, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return bearerRequest{}, errNoToken
	}
	token := strings.TrimLeft(rest, " ")
	switch {
	case token == "":
		return bearerRequest{}, fmt.Errorf("%w: empty bearer token", errInvalidToken)
	case len(token) > accesstoken.MaxTokenLength:
		return bearerRequest{}, fmt.Errorf("%w: token of %d bytes", errInvalidToken, len(token))
	case !isB64Token(token):
		return bearerRequest{}, fmt.Errorf("%w: not one b64token", errInvalidToken)
	}
	return bearerRequest{Token: token}, nil
}

// isB64Token reports whether s is a b64token (RFC 6750 section 2.1). It runs
// on every API request, so it reads a table, one load per byte.
func isB64Token(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for i := 0; i < len(body); i++ {
		if !b64TokenByte[body[i]] {
			return false
		}
	}
	return true
}

// b64TokenByte holds the bytes of a b64token before its "=" padding.
var b64TokenByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", byte(c)) >= 0
	}
	return t
}()
