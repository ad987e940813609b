package api

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// callerKey is the gin.Context key of the request's authenticated caller.
type callerKey struct{}

// caller is the authenticated client of a request: its verified token
// claims (shared with the token cache: read-only) and what the one Redis
// round trip said about it.
type caller struct {
	claims    *accesstoken.Claims
	admission clients.APIAdmission
}

// callerOf returns the request's authenticated caller.
func callerOf(c *gin.Context) (*caller, bool) {
	v, _ := c.Get(callerKey{})
	cl, ok := v.(*caller)
	return cl, ok
}

// authenticate admits a request to the API through package admission: the
// bearer token parsed from the Authorization header (none in the query),
// verified (cached per token, time checked on every request), then one
// Redis round trip (clients.Store.AdmitAPI) that checks the client is
// active at the token's credential generation, counts the request against
// the client's limit across every replica and reads what /me describes. A
// rotation or revocation therefore shows on the very next request, and
// nothing is served whose client state was not read: if Redis or the key
// set fails the answer is 503.
//
// Every admitted or rate-limited answer carries RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset; every answer Cache-Control:
// no-store.
func (s *server) authenticate(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	out := s.admission.Admit(c.Request.Context(), c.Request)
	if out.Nonce != "" {
		c.Header("DPoP-Nonce", out.Nonce) // RFC 9449 section 9
	}
	switch out.Result {
	case admission.Admitted:
		setRateLimitHeaders(c, out.Admission.Description.RateLimitPerMinute, out.Admission.Decision)
		httpserver.Annotate(c.Request.Context(), slog.String("client_id", out.Claims.ClientID))
		c.Set(callerKey{}, &caller{claims: out.Claims, admission: out.Admission})
		c.Next()
	case admission.RateLimited:
		setRateLimitHeaders(c, out.Admission.Description.RateLimitPerMinute, out.Admission.Decision)
		s.fail(c, refusal(out))
	default:
		s.fail(c, refusal(out))
	}
}

// refusal is the problem that answers a refused admission, wrapping its
// cause for the logs. Every token that is not good, for whatever reason,
// gets the one invalid_token answer (RFC 6750 section 3.1); an operator
// client's token is "not for this API" alike (deploy/docs/operator-guide.md:
// Admin API).
func refusal(out admission.Outcome) error {
	if out.DPoP {
		if p := dpopRefusal(out); p != nil && out.Result == admission.Revoked {
			return fmt.Errorf("%w: %w: %w", p, errRevoked, out.Err)
		} else if p != nil {
			return fmt.Errorf("%w: %w", p, out.Err)
		}
	}
	switch out.Result {
	case admission.MissingToken:
		return fmt.Errorf("%w: %w", errNoToken, out.Err)
	case admission.MalformedRequest:
		return fmt.Errorf("%w: %w", errInvalidRequest, out.Err)
	case admission.MalformedToken, admission.Invalid, admission.Expired, admission.WrongAudience:
		return fmt.Errorf("%w: %w", errInvalidToken, out.Err)
	case admission.Revoked:
		return fmt.Errorf("%w: %w: %w", errInvalidToken, errRevoked, out.Err)
	case admission.WrongCertificate:
		return fmt.Errorf("%w: %w", errWrongCertificate, out.Err)
	case admission.RateLimited:
		return fmt.Errorf("%w: %w", rateLimited(out.Admission.Decision), out.Err)
	default: // admission.Unavailable
		return fmt.Errorf("%w: %w", errUnavailable, out.Err)
	}
}

// setRateLimitHeaders reports the client's limit (the RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset fields of the IETF httpapi
// rate-limit headers draft; see the package documentation). On a 429
// RateLimit-Reset equals Retry-After (ratelimit.Decision.Reset).
//
// The fields are set by their canonical keys (what http.Header.Set would
// store and net/http writes) and share one backing array: Set made a new
// canonical key and a slice for each, on every API call.
func setRateLimitHeaders(c *gin.Context, limit int64, d ratelimit.Decision) {
	h := c.Writer.Header()
	v := [...]string{
		strconv.FormatInt(limit, 10),
		strconv.FormatInt(d.Remaining(limit), 10),
		strconv.FormatInt(d.Reset(clients.Window), 10),
	}
	vs := v[:]
	h[headerRateLimitLimit] = vs[0:1:1]
	h[headerRateLimitRemaining] = vs[1:2:2]
	h[headerRateLimitReset] = vs[2:3:3]
}

// The canonical keys of the rate-limit fields
// (textproto.CanonicalMIMEHeaderKey of RateLimit-Limit and so on; pinned by
// TestRateLimitHeaderKeys).
const (
	headerRateLimitLimit     = "Ratelimit-Limit"
	headerRateLimitRemaining = "Ratelimit-Remaining"
	headerRateLimitReset     = "Ratelimit-Reset"
)

// dpopRefusal is the answer to a refused request that used the DPoP scheme
// or a DPoP-bound token (RFC 9449 section 7.1): 401 with a DPoP challenge
// (its algs) instead of the Bearer one, the detail of errInvalidToken for
// a bad token, the proof's fixed refusal text for a bad proof (authenticate
// adds the DPoP-Nonce of use_dpop_nonce, section 9). Nil for the refusals whose
// answer does not depend on the scheme (429, 503).
func dpopRefusal(out admission.Outcome) *problem {
	p := problem{status: http.StatusUnauthorized, invalidToken: true}
	switch out.Result {
	case admission.MalformedToken, admission.Invalid, admission.Expired, admission.WrongAudience, admission.Revoked:
		p.detail, p.challenge = errInvalidToken.detail, dpop.Challenge("invalid_token", "")
	case admission.WrongCertificate:
		p.detail, p.challenge = errWrongCertificate.detail, dpop.Challenge("invalid_token", "")
	case admission.InvalidProof, admission.UseNonce:
		code, desc := dpop.CodeInvalidProof, "invalid DPoP proof"
		var e *dpop.Error
		if errors.As(out.Err, &e) {
			code, desc = e.Code(), e.Description
		}
		p.detail, p.challenge = desc, dpop.Challenge(code, desc)
		p.invalidToken = code == dpop.CodeInvalidProof
	default:
		return nil
	}
	return &p
}
