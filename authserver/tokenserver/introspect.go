package tokenserver

import (
	"net/http"
	"strconv"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/jsontext"
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
	// Cnf is a bound token's confirmation: cnf.jkt of a DPoP-bound token
	// (RFC 9449 section 6.2), cnf.x5t#S256 of a certificate-bound one (RFC
	// 8705 section 3.2), both for a token bound both ways; absent for a
	// bearer token.
	Cnf *accesstoken.Confirmation `json:"cnf,omitempty"`
}

// appendJSON appends i's JSON, what json.Marshal writes of it (the keys in
// the struct's order, cnf only for a bound token; TestAnswerText,
// FuzzAnswerText): package jsontext says why by hand.
func (i Introspection) appendJSON(b []byte) []byte {
	b = append(b, `{"active":`...)
	b = strconv.AppendBool(b, i.Active)
	b = append(b, `,"scope":`...)
	b = jsontext.AppendHTMLString(b, i.Scope)
	b = append(b, `,"client_id":`...)
	b = jsontext.AppendHTMLString(b, i.ClientID)
	b = append(b, `,"token_type":`...)
	b = jsontext.AppendHTMLString(b, i.TokenType)
	b = append(b, `,"exp":`...)
	b = strconv.AppendInt(b, i.Exp, 10)
	b = append(b, `,"iat":`...)
	b = strconv.AppendInt(b, i.Iat, 10)
	b = append(b, `,"sub":`...)
	b = jsontext.AppendHTMLString(b, i.Sub)
	b = append(b, `,"aud":`...)
	b = jsontext.AppendHTMLString(b, i.Aud)
	b = append(b, `,"iss":`...)
	b = jsontext.AppendHTMLString(b, i.Iss)
	b = append(b, `,"jti":`...)
	b = jsontext.AppendHTMLString(b, i.Jti)
	if i.Cnf != nil {
		b = append(b, `,"cnf":{`...)
		if i.Cnf.JKT != "" {
			b = append(b, `"jkt":`...)
			b = jsontext.AppendHTMLString(b, i.Cnf.JKT)
		}
		if i.Cnf.X5T != "" {
			if i.Cnf.JKT != "" {
				b = append(b, ',')
			}
			b = append(b, `"x5t#S256":`...)
			b = jsontext.AppendHTMLString(b, i.Cnf.X5T)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendInactive appends the answer for a token that is not active (RFC
// 7662 section 2.2): json.Marshal's text of {"active": false}.
func appendInactive(b []byte) []byte { return append(b, `{"active":false}`...) }

// handleIntrospect serves POST /api/v1/oauth/introspect/ (RFC 7662). The
// caller authenticates as a client exactly as on the token endpoint and
// learns only about its own tokens: any other token, and any expired,
// rotated, revoked, tampered, foreign or malformed one, is {"active":false}.
func (s *Server) handleIntrospect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := s.parse(r, false)
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
		answers.WriteText(w, http.StatusOK, noStoreHeader, appendInactive)
		return
	}
	// RFC 9449 section 6.2: a bound token is described with token_type
	// DPoP and its cnf.jkt; a bearer token's answer is as it always was.
	tokenType := "Bearer"
	if claims.BoundKey() != "" {
		tokenType = "DPoP"
	}
	body := Introspection{
		Active: true, Scope: claims.Scope, ClientID: claims.ClientID, TokenType: tokenType,
		Exp: claims.ExpiresAt, Iat: claims.IssuedAt, Sub: claims.Subject, Aud: claims.Audience,
		Iss: claims.Issuer, Jti: claims.ID, Cnf: claims.Confirmation,
	}
	answers.WriteText(w, http.StatusOK, noStoreHeader, body.appendJSON)
}
