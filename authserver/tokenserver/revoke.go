package tokenserver

import (
	"net/http"

	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
)

// errNotYourToken refuses the revocation of a token issued to another
// client (RFC 7009 section 2.1: the server "verifies whether the token was
// issued to the client making the revocation request. If this validation
// fails, the request is refused").
var errNotYourToken = &oauthError{Status: http.StatusBadRequest, Code: "unauthorized_client",
	Description: "the token was not issued to this client"}

// handleRevoke serves POST /api/v1/oauth/revoke/ (RFC 7009): a client
// revokes one of its own access tokens. The client authenticates exactly
// as on the token endpoint (a secret or an assertion, under the same
// failure limits). A token that is not valid (unknown, malformed, expired,
// already dead) is answered 200 like a revoked one (RFC 7009 section 2.2);
// token_type_hint is optional and, since access tokens are the only kind
// this service issues, not needed to find the token (section 2.1: a server
// that cannot use the hint searches every kind it has). From the answer on,
// the API, the admin API and introspection refuse the token on every
// replica: the mark is read in the round trip each of them already makes.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := s.parse(r, false)
	if err != nil {
		s.refuse(ctx, w, r, credentials{}, err, counted)
		return
	}
	if _, failed, err := s.authenticate(ctx, r, req, false, nil); err != nil {
		s.refuse(ctx, w, r, req.Client, err, failed)
		return
	}
	if !req.Params.Has("token") {
		s.refuse(ctx, w, r, req.Client, invalidRequest("token is required"), counted)
		return
	}
	// Verified and revoked as go-oauth2's token store does it
	// (selfContained.RemoveByAccess), with the caller's ownership checked
	// in between.
	claims, err := s.store.verify(ctx, req.Params.Get("token"))
	switch {
	case err == oauthErrors.ErrInvalidAccessToken:
		writeEmpty(w, http.StatusOK)
		return
	case err != nil: // the key set could not be read
		s.refuse(ctx, w, r, req.Client, err, notCounted)
		return
	case claims.ClientID != req.Client.ID:
		s.refuse(ctx, w, r, req.Client, errNotYourToken, notCounted)
		return
	}
	if err := s.store.revoke(ctx, claims); err != nil {
		s.refuse(ctx, w, r, req.Client, err, notCounted)
		return
	}
	s.metrics.TokenRevoked()
	writeEmpty(w, http.StatusOK)
}

// writeEmpty answers status with no body and Cache-Control: no-store.
func writeEmpty(w http.ResponseWriter, status int) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(status)
}
