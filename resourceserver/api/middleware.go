package api

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
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

// authenticate admits a request to the API (RFC 6750):
//
//  1. the bearer token is parsed from the Authorization header;
//  2. its signature, issuer and audience are verified (cached per token)
//     and its time checked against the clock (on every request);
//  3. one Redis round trip (clients.Store.AdmitAPI) checks that the client
//     is active at the token's credential generation, counts the request
//     against the client's limit across every replica and reads what
//     /me describes. A rotation or revocation therefore shows on the very
//     next request, and nothing is served whose client state was not read:
//     if Redis fails the answer is 503.
//
// Every admitted or rate-limited answer carries RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset; every answer Cache-Control:
// no-store.
func (s *server) authenticate(c *gin.Context) {
	c.Header("Cache-Control", "no-store")
	req, err := parseBearer(c.Request)
	if err != nil {
		s.fail(c, err)
		return
	}
	claims, err := s.tokens.VerifyContext(c.Request.Context(), req.Token)
	if err != nil {
		if errors.Is(err, accesstoken.ErrInvalidToken) {
			s.fail(c, fmt.Errorf("%w: %w", errInvalidToken, err))
		} else {
			s.fail(c, fmt.Errorf("%w: %w", errUnavailable, err))
		}
		return
	}
	adm, err := s.deps.Registry.AdmitAPI(c.Request.Context(), clients.TokenRefOf(claims), s.cfg.RateNow)
	if err != nil {
		s.fail(c, err)
		return
	}
	switch {
	case adm.Outcome != clients.Dead && adm.Description.Audience == clients.AudienceOperator:
		// Operator clients call the admin API; their tokens are never
		// accepted by the partner API (README: Admin API).
		s.fail(c, fmt.Errorf("%w: operator client %s on the partner API", errInvalidToken, claims.ClientID))
		return
	}
	switch adm.Outcome {
	case clients.Admitted:
		setRateLimitHeaders(c, adm.Description.RateLimitPerMinute, adm.Decision)
		httpserver.Annotate(c.Request.Context(), slog.String("client_id", claims.ClientID))
		c.Set(callerKey{}, &caller{claims: claims, admission: adm})
		c.Next()
	case clients.Limited:
		setRateLimitHeaders(c, adm.Description.RateLimitPerMinute, adm.Decision)
		s.fail(c, fmt.Errorf("%w: client %s", rateLimited(adm.Decision), claims.ClientID))
	case clients.Dead:
		s.fail(c, fmt.Errorf("%w: %w: client %s", errInvalidToken, errRevoked, claims.ClientID))
	default:
		s.fail(c, fmt.Errorf("admit %s: unknown outcome %d", claims.ClientID, adm.Outcome))
	}
}

// setRateLimitHeaders reports the client's limit (the RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset fields of the IETF httpapi
// rate-limit headers draft; see the package documentation).
func setRateLimitHeaders(c *gin.Context, limit int64, d ratelimit.Decision) {
	h := c.Writer.Header()
	h.Set("RateLimit-Limit", strconv.FormatInt(limit, 10))
	h.Set("RateLimit-Remaining", strconv.FormatInt(d.Remaining(limit), 10))
	h.Set("RateLimit-Reset", strconv.FormatInt(d.RetryAfterSeconds(), 10))
}
