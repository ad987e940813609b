package tokenserver

import (
	"net/http"
)

// introspection is an active token's description (RFC 7662 section 2.2).
type introspection struct {
	Active    bool   `json:"active"`
	Scope     string `json:"scope"`
	ClientID  string `json:"client_id"`
	TokenType string `json:"token_type"`
	Exp       int64  `json:"exp"`
	Iat       int64  `json:"iat"`
	Sub       string `json:"sub"`
	Aud       string `json:"aud"`
	Iss       string `json:"iss"`
	Jti       string `json:"jti"`
}

var inactive = map[string]bool{"active": false}

// handleIntrospect serves POST /api/v1/oauth/introspect/ (RFC 7662). The
// caller authenticates as a client exactly as on the token endpoint and
// learns only about its own tokens: any other token, and any expired,
// rotated, revoked, tampered, foreign or malformed one, is {"active":false}.
func (s *Server) handleIntrospect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := parseClientRequest(r)
	if err != nil {
		s.refuse(ctx, w, r, credentials{}, err)
		return
	}
	// The caller authenticates on the token endpoint's path, so unknown,
	// wrong-secret and revoked callers look alike.
	auth, err := s.authenticate(ctx, r, req, false)
	if err != nil {
		s.refuse(ctx, w, r, req.Client, err)
		return
	}
	if !req.Params.Has("token") {
		s.refuse(ctx, w, r, req.Client, invalidRequest("token is required"))
		return
	}
	// The caller's own credential, checked above, is active; its token is
	// live exactly when it carries the same credential generation (a
	// rotation or revocation raised it), so no second read is needed.
	claims, err := s.keys.Load().verifier.Verify(req.Params.Get("token"))
	if err != nil || claims.ClientID != req.Client.ID || claims.Generation != auth.Generation {
		writeJSON(w, http.StatusOK, noStore(), inactive)
		return
	}
	writeJSON(w, http.StatusOK, noStore(), introspection{
		Active: true, Scope: claims.Scope, ClientID: claims.ClientID, TokenType: "Bearer",
		Exp: claims.ExpiresAt, Iat: claims.IssuedAt, Sub: claims.Subject, Aud: claims.Audience,
		Iss: claims.Issuer, Jti: claims.ID,
	})
}
