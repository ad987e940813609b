package adminapi

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
	"log/slog"
)

// operator is an authenticated caller.
type operator struct {
	ClientID string
	Scopes   []string
	Address  string
}

// actor names the caller in the audit entries of the changes it makes.
func (o *operator) actor(r *http.Request) audit.Actor {
	return audit.Actor{Operator: o.ClientID, RequestID: logging.RequestID(r.Context()), Address: o.Address}
}

// challenge is the WWW-Authenticate of a refused token (RFC 6750 section
// 3).
func challenge(code, scope string) string {
	v := `Bearer realm="admin"`
	if code != "" {
		v += `, error="` + code + `"`
	}
	if scope != "" {
		v += `, scope="` + scope + `"`
	}
	return v
}

func unauthorized(code, detail string) *problem {
	return newProblem(http.StatusUnauthorized, "invalid_token", detail).with("WWW-Authenticate", challenge(code, ""))
}

// authenticate checks the bearer token of r (RFC 6750): its signature and
// claims, then, in one Redis round trip, that its client is active at the
// token's credential generation, is an operator client, and is under its
// per-minute limit. It returns the caller once the token is known to be
// genuine, even when the call is refused (so the refusal is audited).
func (s *Server) authenticate(ctx context.Context, r *http.Request) (*operator, *problem) {
	token, err := accesstoken.BearerToken(r.Header["Authorization"])
	switch {
	case errors.Is(err, accesstoken.ErrNoBearer):
		return nil, newProblem(http.StatusUnauthorized, "missing_token", "an operator's bearer token is required (Authorization: Bearer svc_at_...)").with("WWW-Authenticate", challenge("", ""))
	case errors.Is(err, accesstoken.ErrMalformedRequest):
		return nil, newProblem(http.StatusBadRequest, "invalid_request", "send one Authorization header").with("WWW-Authenticate", challenge("invalid_request", ""))
	case err != nil:
		return nil, unauthorized("invalid_token", "the token is malformed")
	}
	claims, err := s.deps.Tokens.VerifyToken(token)
	if errors.Is(err, accesstoken.ErrInvalidToken) {
		return nil, unauthorized("invalid_token", "the token is invalid or expired")
	}
	if err != nil {
		return nil, newProblem(http.StatusServiceUnavailable, "unavailable", "tokens cannot be checked right now").with("Retry-After", "5")
	}
	adm, err := s.deps.Admit.AdmitAPI(ctx, clients.TokenRefOf(claims), s.cfg.RateNow)
	if err != nil {
		s.log.ErrorContext(ctx, "admin api: admit", "err", err)
		return nil, newProblem(http.StatusServiceUnavailable, "unavailable", "the registry is unavailable; retry after Retry-After seconds").with("Retry-After", "5")
	}
	if adm.Outcome == clients.Dead {
		return nil, unauthorized("invalid_token", "the token's client is revoked or its secret was rotated")
	}
	op := &operator{ClientID: claims.ClientID, Scopes: strings.Fields(claims.Scope), Address: s.cfg.Trust.Of(r).String()}
	httpserver.Annotate(ctx, slog.String("client_id", op.ClientID))
	if adm.Description.Audience != clients.AudienceOperator {
		return op, newProblem(http.StatusForbidden, "insufficient_scope", "only operator clients call the admin API ('authserver operators create')").
			with("WWW-Authenticate", challenge("insufficient_scope", clients.ScopeAdminRead))
	}
	if adm.Outcome == clients.Limited {
		retry := strconv.FormatInt(adm.Decision.RetryAfterSeconds(), 10)
		return op, newProblem(http.StatusTooManyRequests, "rate_limited", "this operator client's requests per minute are used up; retry after Retry-After seconds").with("Retry-After", retry)
	}
	return op, nil
}

// authorize checks the scope a route needs (RFC 6750 section 3.1).
func authorize(op *operator, need access) *problem {
	scope := clients.ScopeAdminRead
	if need == write {
		scope = clients.ScopeAdminWrite
	}
	if slices.Contains(op.Scopes, scope) {
		return nil
	}
	return newProblem(http.StatusForbidden, "insufficient_scope", "the token lacks the scope "+scope).
		with("WWW-Authenticate", challenge("insufficient_scope", scope))
}
