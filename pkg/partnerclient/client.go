package partnerclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Client calls the API's endpoints with typed answers. It is safe for
// concurrent use.
type Client struct {
	base string
	http *http.Client
	src  *TokenSource
}

// New returns a Client for cfg, which must set BaseURL.
func New(cfg Config) (*Client, error) {
	if cfg.BaseURL == "" {
		return nil, errNoBaseURL
	}
	src, err := NewTokenSource(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{base: src.cfg.BaseURL, http: &http.Client{Transport: &Transport{Source: src}}, src: src}, nil
}

// HTTPClient is the client's *http.Client, for endpoints Client has no
// method for: it adds the token and retries.
func (c *Client) HTTPClient() *http.Client { return c.http }

// TokenSource is the client's token source.
func (c *Client) TokenSource() *TokenSource { return c.src }

// Organization is the organisation a client belongs to.
type Organization struct {
	Name string `json:"name"`
	Slug string `json:"slug"`
}

// Me describes the calling client (GET /api/v1/me/).
type Me struct {
	APIVersion         string       `json:"api_version"`
	ClientID           string       `json:"client_id"`
	Name               string       `json:"name"`
	Audience           string       `json:"audience"`
	Organization       Organization `json:"organization"`
	Environment        string       `json:"environment"`
	Scopes             []string     `json:"scopes"`
	TokenExpiresAt     time.Time    `json:"token_expires_at"`
	RateLimitPerMinute int          `json:"rate_limit_per_minute"`
}

// Me calls GET /api/v1/me/. A non-2xx answer is an *APIError; a failure to
// get a token is a *TokenError.
func (c *Client) Me(ctx context.Context) (*Me, error) {
	var me Me
	if err := c.getJSON(ctx, "/api/v1/me/", &me); err != nil {
		return nil, err
	}
	return &me, nil
}

// getJSON GETs path below the base URL and decodes a 2xx JSON answer.
func (c *Client) getJSON(ctx context.Context, path string, out any) error {
	u, err := url.JoinPath(c.base, path)
	if err != nil {
		return fmt.Errorf("partnerclient: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("partnerclient: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	if err := checkResponse(resp, c.src.cfg.Now); err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("partnerclient: decoding %s: %w", path, err)
	}
	return nil
}
