package tokenserver

import (
	"net/http"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// Introspection is an active token's description (RFC 7662 section 2.2),
// the body of introspection's answer for it. Exported for the bench
// harness's floor of introspection (deploy/bench/ceiling), which answers
// the same fields.
type Introspection struct {
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
	// Cnf is a DPoP-bound token's confirmation (RFC 9449 section 6.2),
	// absent for a bearer token.
	Cnf *accesstoken.Confirmation `json:"cnf,omitempty"`
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
		s.refuse(ctx, w, r, credentials{}, err, counted)
		return
	}
	// The token is verified first (no I/O), so that the round trip that
	// authenticates the caller also reads whether its token still stands:
	// the secret it came from still held, not revoked (RFC 7009).
	claims, verr := s.tokens.VerifyContext(ctx, req.Params.Get("token"))
	var check *clients.TokenRef
	if verr == nil && claims.ClientID == req.Client.ID {
		check = new(clients.TokenRefOf(claims))
	}
	// The caller authenticates on the token endpoint's path, so unknown,
	// wrong-secret and revoked callers look alike.
	auth, failed, err := s.authenticate(ctx, r, req, false, check)
	if err != nil {
		s.refuse(ctx, w, r, req.Client, err, failed)
		return
	}
	if !req.Params.Has("token") {
		s.refuse(ctx, w, r, req.Client, invalidRequest("token is required"), counted)
		return
	}
	// The caller's own credential, checked above, is active; its token is
	// live when it carries the same credential generation (a rotation or
	// revocation of the client raised it) and still stands.
	if check == nil || claims.Generation != auth.Generation || !auth.TokenAlive {
		writeJSON(w, http.StatusOK, noStoreHeader, inactive)
		return
	}
	// RFC 9449 section 6.2: a bound token is described with token_type
	// DPoP and its cnf.jkt; a bearer token's answer is as it always was.
	tokenType := "Bearer"
	if claims.BoundKey() != "" {
		tokenType = "DPoP"
	}
	writeJSON(w, http.StatusOK, noStoreHeader, Introspection{
		Active: true, Scope: claims.Scope, ClientID: claims.ClientID, TokenType: tokenType,
		Exp: claims.ExpiresAt, Iat: claims.IssuedAt, Sub: claims.Subject, Aud: claims.Audience,
		Iss: claims.Issuer, Jti: claims.ID, Cnf: claims.Confirmation,
	})
}
