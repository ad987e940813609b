package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// APIVersion is the major version of the API, the v1 of its paths and the
// api_version of GET /api/v1/me/ (apidocs/openapi.json;
// apidocs/guides/quickstart.md, 3. Call the API).
const APIVersion = "1"

// clientDescription is the body of GET /api/v1/me/, keys exactly as the
// OpenAPI document (apidocs/openapi.json, and TestClientDescriptionMatchesSpec
// in package apidocs) and apidocs/guides/quickstart.md name them.
type clientDescription struct {
	APIVersion         string       `json:"api_version"`
	ClientID           string       `json:"client_id"`
	Name               string       `json:"name"`
	Audience           string       `json:"audience"`
	Organization       organization `json:"organization"`
	Environment        string       `json:"environment"`
	Scopes             []string     `json:"scopes"`
	TokenExpiresAt     string       `json:"token_expires_at"`
	RateLimitPerMinute int64        `json:"rate_limit_per_minute"`
}

type organization struct {
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// me describes the calling client: the token's own claims (client, scopes,
// expiry) and what the admission read from Redis in the same round trip
// (name, organisation, environment, current limit). It costs no further
// Redis call.
func (s *server) me(c *gin.Context) {
	cl, ok := callerOf(c)
	if !ok {
		s.fail(c, errors.New("GET /api/v1/me/ without authentication"))
		return
	}
	d := cl.admission.Description
	writeJSON(c, http.StatusOK, clientDescription{
		APIVersion:         APIVersion,
		ClientID:           cl.claims.ClientID,
		Name:               d.Name,
		Audience:           d.Audience,
		Organization:       organization{Name: d.OrgName, Slug: d.OrgSlug},
		Environment:        d.Environment,
		Scopes:             cl.claims.Scopes(),
		TokenExpiresAt:     time.Unix(cl.claims.ExpiresAt, 0).UTC().Format(time.RFC3339),
		RateLimitPerMinute: d.RateLimitPerMinute,
	})
}
