package accesstoken

import (
	"errors"
	"fmt"
	"strings"
)

// Errors of BearerToken.
var (
	// ErrNoBearer: no Authorization header, or another scheme (RFC 6750
	// section 3.1: the answer carries no error code).
	ErrNoBearer = errors.New("no bearer token")
	// ErrMalformedRequest: more than one Authorization header (RFC 6750
	// section 3.1, invalid_request).
	ErrMalformedRequest = errors.New("malformed authorization")
)

// BearerToken reads the token of an Authorization header (RFC 6750 section
// 2.1: "Bearer" case-insensitively, then one b64token), given the request's
// Authorization header values. A malformed token is an ErrInvalidToken.
func BearerToken(authorization []string) (string, error) {
	switch len(authorization) {
	case 0:
		return "", ErrNoBearer
	case 1:
	default:
		return "", fmt.Errorf("%w: %d Authorization headers", ErrMalformedRequest, len(authorization))
	}
	scheme, rest, _ := strings.Cut(authorization[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", ErrNoBearer
	}
	token := strings.TrimLeft(rest, " ")
	switch {
	case token == "":
		return "", fmt.Errorf("%w: empty bearer token", ErrInvalidToken)
	case len(token) > MaxTokenLength:
		return "", fmt.Errorf("%w: token of %d bytes", ErrInvalidToken, len(token))
	case !IsB64Token(token):
		return "", fmt.Errorf("%w: not one b64token", ErrInvalidToken)
	}
	return token, nil
}

// IsB64Token reports whether s is a b64token (RFC 6750 section 2.1):
// letters, digits and -._~+/ then any number of "=". It runs on every API
// request, so it reads a table, one load per byte.
func IsB64Token(s string) bool {
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

var b64TokenByte = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "-._~+/" {
		t[c] = true
	}
	return t
}()
