package partnerclient

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"
)

// TokenSource gets access tokens with the client credentials grant and
// caches them. It is safe for concurrent use: however many goroutines ask
// while no valid token is cached, one token request is in flight and all of
// them get its result.
type TokenSource struct {
	cfg Config // ClientSecret cleared: see secret
	// secret returns the client secret. A closure, not a string field, so
	// that no fmt verb (%#v prints unexported fields) can print it.
	secret func() string
	group  singleflight.Group

	mu  sync.Mutex
	tok *oauth2.Token // the cached token, nil if none
}

var _ oauth2.TokenSource = (*TokenSource)(nil)

// NewTokenSource checks cfg and returns a TokenSource.
func NewTokenSource(cfg Config) (*TokenSource, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	secret := cfg.ClientSecret
	cfg.ClientSecret = ""
	return &TokenSource{cfg: cfg, secret: func() string { return secret }}, nil
}

// String describes the source without its secret or token.
func (s *TokenSource) String() string {
	return fmt.Sprintf("partnerclient.TokenSource{TokenURL: %q, ClientID: %q, ClientSecret: (redacted)}", s.cfg.TokenURL, s.cfg.ClientID)
}

// GoString is String, for %#v.
func (s *TokenSource) GoString() string { return s.String() }

// Token returns a cached token, or gets a new one when none is cached or the
// cached one expires within RenewBefore. It implements oauth2.TokenSource.
// It has no context: prefer TokenContext.
func (s *TokenSource) Token() (*oauth2.Token, error) {
	return s.TokenContext(context.Background())
}

// TokenContext is Token bounded by ctx. The returned token must not be
// modified. A caller whose ctx ends stops waiting, while the token request
// others share goes on.
func (s *TokenSource) TokenContext(ctx context.Context) (*oauth2.Token, error) {
	if tok := s.cached(); tok != nil {
		return tok, nil
	}
	for {
		ch := s.group.DoChan("token", func() (any, error) {
			if tok := s.cached(); tok != nil { // a request that just finished
				return tok, nil
			}
			fctx, cancel := shared(ctx)
			defer cancel()
			return s.fetch(fctx)
		})
		select {
		case res := <-ch:
			if res.Err == nil {
				return res.Val.(*oauth2.Token), nil
			}
			// The request was bounded by the deadline of the caller that
			// started it; a caller with time left starts another.
			if errors.Is(res.Err, context.DeadlineExceeded) && ctx.Err() == nil {
				continue
			}
			return nil, res.Err
		case <-ctx.Done():
			return nil, &TokenError{Err: ctx.Err()}
		}
	}
}

// shared is the context of a token request that several callers may wait
// for: it keeps ctx's values and deadline, so Retry-After waits and the
// request stay within the deadline of the caller that started it, but not
// its cancellation, which must not fail the other callers.
func shared(ctx context.Context) (context.Context, context.CancelFunc) {
	out := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(out, dl)
	}
	return out, func() {}
}

// cached returns the cached token if it is valid for more than RenewBefore.
func (s *TokenSource) cached() *oauth2.Token {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok != nil && s.cfg.Now().Before(s.tok.Expiry.Add(-s.cfg.RenewBefore)) {
		return s.tok
	}
	return nil
}

// Invalidate drops the cached token if it is accessToken, so the next
// Token call gets a new one. Transport calls it on a 401; a token that was
// already replaced is left alone, so many requests failing with the same
// old token cause one token request, not many.
func (s *TokenSource) Invalidate(accessToken string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tok != nil && s.tok.AccessToken == accessToken {
		s.tok = nil
	}
}

// tokenResponse is a successful token answer (RFC 6749 section 5.1).
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
}

// fetch gets a token, retrying 429, 5xx and failed connections within
// MaxRetries, and caches it.
func (s *TokenSource) fetch(ctx context.Context) (*oauth2.Token, error) {
	for attempt := 0; ; attempt++ {
		start := s.cfg.Now()
		tok, err := s.request(ctx, start)
		if err == nil {
			s.mu.Lock()
			s.tok = tok
			s.mu.Unlock()
			s.cfg.Logger.DebugContext(ctx, "partnerclient: token fetched", "client_id", s.cfg.ClientID, "expiry", tok.Expiry)
			return tok, nil
		}
		var te *TokenError
		if !errors.As(err, &te) || attempt >= s.cfg.MaxRetries {
			return nil, err
		}
		if te.StatusCode != 0 && !retryable(te.StatusCode) {
			return nil, err // 400, 401: retrying cannot help
		}
		wait, ok := s.cfg.waitFor(ctx, te.StatusCode, te.RetryAfter, attempt)
		if !ok {
			return nil, err
		}
		s.cfg.Logger.InfoContext(ctx, "partnerclient: retrying token request", "status", te.StatusCode, "error", te.Code, "wait", wait, "attempt", attempt+1)
		if serr := s.cfg.Sleep(ctx, wait); serr != nil {
			return nil, &TokenError{Err: serr}
		}
	}
}

// request sends one token request (RFC 6749 section 4.4.2).
func (s *TokenSource) request(ctx context.Context, start time.Time) (*oauth2.Token, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(s.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(s.cfg.Scopes, " "))
	}
	if s.cfg.AuthStyle == AuthForm {
		form.Set("client_id", s.cfg.ClientID)
		form.Set("client_secret", s.secret())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, &TokenError{Err: errors.New("building the request failed")} // never echo the form
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if s.cfg.AuthStyle == AuthBasic {
		// RFC 6749 section 2.3.1: form-urlencode id and secret, then Basic.
		cred := url.QueryEscape(s.cfg.ClientID) + ":" + url.QueryEscape(s.secret())
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(cred)))
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		// *url.Error names the URL and the cause, never the body or header.
		return nil, &TokenError{Err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return nil, &TokenError{StatusCode: resp.StatusCode, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if resp.StatusCode != http.StatusOK {
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(data, &oe)
		return nil, &TokenError{StatusCode: resp.StatusCode, Code: oe.Error, Description: oe.Description,
			RetryAfter: retryAfter(resp.Header, s.cfg.Now)}
	}
	var tr tokenResponse
	if err := json.Unmarshal(data, &tr); err != nil || tr.AccessToken == "" {
		return nil, &TokenError{StatusCode: resp.StatusCode, Err: errors.New("the answer holds no access_token")}
	}
	if !strings.EqualFold(tr.TokenType, "Bearer") {
		return nil, &TokenError{StatusCode: resp.StatusCode, Err: fmt.Errorf("token_type %q, want Bearer", tr.TokenType)}
	}
	if tr.ExpiresIn <= 0 {
		return nil, &TokenError{StatusCode: resp.StatusCode, Err: errors.New("the answer holds no positive expires_in")}
	}
	tok := &oauth2.Token{
		AccessToken: tr.AccessToken, TokenType: "Bearer", ExpiresIn: tr.ExpiresIn,
		// Expiry counts from when the request was sent, not answered: a
		// slow answer makes the token renew early, never late.
		Expiry: start.Add(time.Duration(tr.ExpiresIn) * time.Second),
	}
	return tok.WithExtra(map[string]any{"scope": tr.Scope}), nil
}
