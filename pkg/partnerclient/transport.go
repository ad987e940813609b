package partnerclient

import (
	"errors"
	"io"
	"net/http"
)

// Transport is an http.RoundTripper that sends every request with
// "Authorization: Bearer" and a token of Source (with Config.DPoPKey and a
// DPoP-bound token: "Authorization: DPoP" and a fresh DPoP proof, RFC 9449
// section 7.1), and retries as the API recommends: once after a 401 with a
// fresh token (once after a 401 use_dpop_nonce with the server's nonce,
// section 9), after a 429 when
// Retry-After allows, and after a 5xx with backoff (see the package
// documentation). A request is retried only if its body can be replayed
// (no body, or GetBody set, as http.NewRequest does for in-memory bodies);
// otherwise its first answer is returned.
//
// Like any RoundTripper it returns non-2xx answers as responses, not errors:
// use CheckResponse (or Client) to turn them into *APIError. It returns an
// error when no token could be got (a *TokenError, such as invalid_client
// once the secret was rotated) or the request could not be sent.
type Transport struct {
	// Source supplies and renews the tokens.
	Source *TokenSource
	// Base sends the requests (nil: the Transport of Source's HTTPClient,
	// or http.DefaultTransport).
	Base http.RoundTripper
}

// NewHTTPClient returns an *http.Client whose requests carry tokens of a
// new TokenSource for cfg and are retried as Transport says.
func NewHTTPClient(cfg Config) (*http.Client, error) {
	src, err := NewTokenSource(cfg)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &Transport{Source: src}}, nil
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	if t.Source.cfg.HTTPClient.Transport != nil {
		return t.Source.cfg.HTTPClient.Transport
	}
	return http.DefaultTransport
}

// RoundTrip implements http.RoundTripper. It does not modify req.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	cfg := &t.Source.cfg
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	refreshed, nonced := false, false
	for attempt, retries := 0, 0; ; attempt++ {
		tok, err := t.Source.TokenContext(ctx)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		out := req.Clone(ctx)
		if attempt > 0 && req.Body != nil && req.Body != http.NoBody {
			if out.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		if err := t.Source.authorize(out, tokenValue{tok.AccessToken, tok.TokenType}); err != nil {
			closeBody(out)
			return nil, err
		}
		resp, err := t.base().RoundTrip(out)
		if err != nil {
			return resp, err
		}
		fresh := t.Source.dpopAnswer(out.URL, resp)
		if !replayable {
			return resp, nil
		}
		switch {
		case fresh && !nonced && nonceChallenge(resp):
			// RFC 9449 section 9: the resource server wants its nonce in
			// the proof. Once more with it, and the same token.
			nonced = true
			discard(resp)
			cfg.Logger.InfoContext(ctx, "partnerclient: use_dpop_nonce, retrying once with the server's nonce", "method", req.Method, "path", req.URL.Path)
			continue
		case resp.StatusCode == http.StatusUnauthorized && !refreshed:
			// RFC 6750 section 3.1: the token expired or was revoked (a
			// rotation). Drop it and try once more with a fresh one.
			refreshed = true
			discard(resp)
			t.Source.Invalidate(tok.AccessToken)
			cfg.Logger.InfoContext(ctx, "partnerclient: 401, retrying once with a fresh token", "method", req.Method, "path", req.URL.Path)
			continue
		case retryable(resp.StatusCode) && retries < cfg.MaxRetries:
			wait, ok := cfg.waitFor(ctx, resp.StatusCode, retryAfter(resp.Header, cfg.Now), retries)
			if !ok {
				return resp, nil
			}
			retries++
			discard(resp)
			cfg.Logger.InfoContext(ctx, "partnerclient: retrying", "method", req.Method, "path", req.URL.Path,
				"status", resp.StatusCode, "wait", wait, "attempt", retries)
			if err := cfg.Sleep(ctx, wait); err != nil {
				return nil, err
			}
			continue
		}
		return resp, nil
	}
}

// discard reads a little of an answer that is retried, so its connection
// can be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	_ = resp.Body.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// errNoBaseURL is returned by Client calls without Config.BaseURL.
var errNoBaseURL = errors.New("partnerclient: Config.BaseURL is required for API calls")

var _ http.RoundTripper = (*Transport)(nil)
