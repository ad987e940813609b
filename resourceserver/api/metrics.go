package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/metrics"
)

// Metrics receives what the resource server counts for its operators (a
// *metrics.ResourceServer in production).
type Metrics interface {
	// ObserveHTTP counts every answer by route, method and status class
	// (the base layer's Observer).
	httpserver.Observer
	// Refused counts an answer of status 401, 403 or 429 by reason (the
	// metrics.Reason constants).
	Refused(status int, reason string)
	// TokenCache counts a lookup of the verified-token cache.
	TokenCache(hit bool)
}

// noMetrics counts nothing (Deps.Metrics unset).
type noMetrics struct{}

func (noMetrics) ObserveHTTP(string, string, int, time.Duration) {}
func (noMetrics) Refused(int, string)                            {}
func (noMetrics) TokenCache(bool)                                {}

// errRevoked is the cause of a token refused because its client was revoked
// or its secret rotated after it was issued.
var errRevoked = errors.New("client revoked or credentials rotated")

// routeLabel gives the base layer around the engine the matched route
// pattern ("/docs/:page"), never the raw path, for the metrics.
func (s *server) routeLabel(c *gin.Context) {
	httpserver.SetRoute(c.Request.Context(), c.FullPath())
	c.Next()
}

// countRefusal counts a 401, 403 or 429 answer of problem p caused by err.
func (s *server) countRefusal(p *problem, err error) {
	var reason string
	switch {
	case p == errNoToken:
		reason = metrics.ReasonMissingToken
	case p.status == http.StatusTooManyRequests: // errRateLimited (or a copy, should a wait ever exceed the window)
		reason = metrics.ReasonRateLimited
	case p.status == http.StatusForbidden:
		reason = metrics.ReasonInsufficientScope
	case p.invalidToken && errors.Is(err, errRevoked):
		reason = metrics.ReasonRevoked
	case p.invalidToken && errors.Is(err, accesstoken.ErrExpired):
		reason = metrics.ReasonExpiredToken
	case p.invalidToken:
		reason = metrics.ReasonInvalidToken
	default:
		return
	}
	s.metrics.Refused(p.status, reason)
}
