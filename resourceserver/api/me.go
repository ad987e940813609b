package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/pkg/jsontext"
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

// appendJSON appends d's JSON, what encoding/json writes of it (the keys
// in the struct's order; TestMeBody, FuzzMeBody): package jsontext says
// why by hand.
func (d clientDescription) appendJSON(b []byte) []byte {
	b = append(b, `{"api_version":`...)
	b = jsontext.AppendString(b, d.APIVersion)
	b = append(b, `,"client_id":`...)
	b = jsontext.AppendString(b, d.ClientID)
	b = append(b, `,"name":`...)
	b = jsontext.AppendString(b, d.Name)
	b = append(b, `,"audience":`...)
	b = jsontext.AppendString(b, d.Audience)
	b = append(b, `,"organization":{"name":`...)
	b = jsontext.AppendString(b, d.Organization.Name)
	b = append(b, `,"slug":`...)
	b = jsontext.AppendString(b, d.Organization.Slug)
	b = append(b, `},"environment":`...)
	b = jsontext.AppendString(b, d.Environment)
	b = append(b, `,"scopes":`...)
	if d.Scopes == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, sc := range d.Scopes {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, sc)
		}
		b = append(b, ']')
	}
	b = append(b, `,"token_expires_at":`...)
	b = jsontext.AppendString(b, d.TokenExpiresAt)
	b = append(b, `,"rate_limit_per_minute":`...)
	b = strconv.AppendInt(b, d.RateLimitPerMinute, 10)
	return append(b, '}')
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
	body := clientDescription{
		APIVersion:         APIVersion,
		ClientID:           cl.claims.ClientID,
		Name:               d.Name,
		Audience:           d.Audience,
		Organization:       organization{Name: d.OrgName, Slug: d.OrgSlug},
		Environment:        d.Environment,
		Scopes:             cl.claims.Scopes(),
		TokenExpiresAt:     time.Unix(cl.claims.ExpiresAt, 0).UTC().Format(time.RFC3339),
		RateLimitPerMinute: d.RateLimitPerMinute,
	}
	writeJSONText(c, http.StatusOK, body.appendJSON)
}
