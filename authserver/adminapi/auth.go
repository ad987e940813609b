package adminapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
)

// operator is an authenticated caller.
type operator struct {
	ClientID string
	Scopes   []string
	Address  string
	// DPoP: the call used the DPoP scheme (RFC 9449 section 7.1), so a
	// refusal challenges with DPoP, not Bearer.
	DPoP bool
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

// dpopChallenge is the WWW-Authenticate of a refused DPoP call (RFC 9449
// section 7.1): the DPoP scheme, its algs, the scope a route needs.
func dpopChallenge(code, description, scope string) string {
	v := dpop.Challenge(code, description)
	if scope != "" {
		v += `, scope="` + scope + `"`
	}
	return v
}

func unauthorized(detail string) *problem {
	return newProblem(http.StatusUnauthorized, "invalid_token", detail).with("WWW-Authenticate", challenge("invalid_token", ""))
}

// authenticate admits r through package admission (RFC 6750): the bearer
// token's signature and claims, then, in one Redis round trip, that its
// client is active at the token's credential generation, is an operator
// client, and is under its per-minute limit. It returns the caller once the
// token is known to be genuine and its client in good standing, even when
// the call is refused (so the refusal is audited), and the problem that
// refuses it, if any.
func (s *Server) authenticate(ctx context.Context, w http.ResponseWriter, r *http.Request) (*operator, *problem) {
	out := s.admission.Admit(ctx, r)
	if out.Nonce != "" {
		w.Header().Set("DPoP-Nonce", out.Nonce) // RFC 9449 section 9
	}
	if out.Result == admission.Unavailable {
		s.log.ErrorContext(ctx, "admin api: admit", "err", out.Err)
	}
	var op *operator
	if out.Result == admission.Admitted || out.Result == admission.WrongAudience || out.Result == admission.RateLimited {
		op = &operator{ClientID: out.Claims.ClientID, Scopes: strings.Fields(out.Claims.Scope), Address: s.cfg.Trust.Of(r).String(), DPoP: out.DPoP}
		httpserver.Annotate(ctx, slog.String("client_id", op.ClientID))
	}
	return op, refusal(out)
}

// refusal is the problem that answers a refused admission (nil: admitted).
func refusal(out admission.Outcome) *problem {
	if out.DPoP {
		if p := dpopRefusal(out); p != nil {
			return p
		}
	}
	switch out.Result {
	case admission.Admitted:
		return nil
	case admission.MissingToken:
		return newProblem(http.StatusUnauthorized, "missing_token", "an operator's bearer token is required (Authorization: Bearer svc_at_...)").with("WWW-Authenticate", challenge("", ""))
	case admission.MalformedRequest:
		return newProblem(http.StatusBadRequest, "invalid_request", "send one Authorization header").with("WWW-Authenticate", challenge("invalid_request", ""))
	case admission.MalformedToken:
		return unauthorized("the token is malformed")
	case admission.Invalid, admission.Expired:
		return unauthorized("the token is invalid or expired")
	case admission.Revoked:
		return unauthorized("the token's client is revoked or its secret was rotated")
	case admission.WrongCertificate:
		// RFC 8705 section 3.
		return unauthorized("the token is bound to a client certificate: call over a connection that presents that certificate")
	case admission.WrongAudience:
		return newProblem(http.StatusForbidden, "insufficient_scope", "only operator clients call the admin API ('authserver operators create')").
			with("WWW-Authenticate", challenge("insufficient_scope", clients.ScopeAdminRead))
	case admission.RateLimited:
		retry := strconv.FormatInt(out.Admission.Decision.RetryAfterSeconds(), 10)
		return newProblem(http.StatusTooManyRequests, "rate_limited", "this operator client's requests per minute are used up; retry after Retry-After seconds").with("Retry-After", retry)
	default: // admission.Unavailable: the key set or the registry cannot be read
		return newProblem(http.StatusServiceUnavailable, "unavailable", "tokens cannot be checked right now; retry after Retry-After seconds").with("Retry-After", "5")
	}
}

// dpopRefusal is the problem that answers a refused call that used the
// DPoP scheme or a DPoP-bound token (RFC 9449 section 7.1): the Bearer
// answer's status, code and detail under a DPoP challenge for a bad token
// or client, invalid_dpop_proof or use_dpop_nonce with the proof's fixed
// refusal text for a bad proof. Nil for the answers that do not depend on
// the scheme (429, 503).
func dpopRefusal(out admission.Outcome) *problem {
	switch out.Result {
	case admission.MalformedToken, admission.Invalid, admission.Expired, admission.Revoked, admission.WrongCertificate:
		p := refusal(admission.Outcome{Result: out.Result})
		return p.with("WWW-Authenticate", dpopChallenge("invalid_token", "", ""))
	case admission.WrongAudience:
		p := refusal(admission.Outcome{Result: out.Result})
		return p.with("WWW-Authenticate", dpopChallenge("insufficient_scope", "", clients.ScopeAdminRead))
	case admission.InvalidProof, admission.UseNonce:
		code, desc := dpop.CodeInvalidProof, "invalid DPoP proof"
		var e *dpop.Error
		if errors.As(out.Err, &e) {
			code, desc = e.Code(), e.Description
		}
		return newProblem(http.StatusUnauthorized, code, desc).with("WWW-Authenticate", dpopChallenge(code, desc, ""))
	default:
		return nil
	}
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
	c := challenge("insufficient_scope", scope)
	if op.DPoP {
		c = dpopChallenge("insufficient_scope", "", scope)
	}
	return newProblem(http.StatusForbidden, "insufficient_scope", "the token lacks the scope "+scope).with("WWW-Authenticate", c)
}
