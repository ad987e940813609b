package partnerclient

import (
	"context"
	"crypto"
	"crypto/rand"
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
	cfg Config // ClientSecret and PrivateKey cleared: see secret and signer
	// secret returns the client secret, signer the private key. Closures,
	// not fields, so that no fmt verb (%#v prints unexported fields) can
	// print them.
	secret func() string
	signer func() crypto.Signer
	dpop   *dpopKey // nil without Config.DPoPKey
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
	secret, key := cfg.ClientSecret, cfg.PrivateKey
	cfg.ClientSecret, cfg.PrivateKey = "", nil
	s := &TokenSource{cfg: cfg, secret: func() string { return secret }, signer: func() crypto.Signer { return key }}
	if cfg.DPoPKey != nil {
		if s.dpop, err = newDPoPKey(cfg.DPoPKey, cfg.DPoPAlgorithm); err != nil {
			return nil, err
		}
		s.cfg.DPoPKey = nil
	}
	return s, nil
}

// String describes the source without its secret, key or token.
func (s *TokenSource) String() string {
	if s.cfg.AuthStyle == AuthPrivateKeyJWT {
		return fmt.Sprintf("partnerclient.TokenSource{TokenURL: %q, ClientID: %q, PrivateKey: (redacted), KeyID: %q, Algorithm: %q}",
			s.cfg.TokenURL, s.cfg.ClientID, s.cfg.KeyID, s.cfg.Algorithm)
	}
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
	var tok *oauth2.Token
	err := s.retry(ctx, "token", func() error {
		var err error
		tok, err = s.request(ctx, s.cfg.Now())
		return err
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.tok = tok
	s.mu.Unlock()
	s.cfg.Logger.DebugContext(ctx, "partnerclient: token fetched", "client_id", s.cfg.ClientID, "expiry", tok.Expiry)
	return tok, nil
}

// retry calls do, a request to the token or revocation endpoint, until it
// succeeds, fails in a way no retry fixes (a 400 or 401, or an error that is
// no *TokenError), MaxRetries retries are spent, or the wait a 429 or 5xx
// asks for is longer than MaxWait or ctx allows.
func (s *TokenSource) retry(ctx context.Context, endpoint string, do func() error) error {
	for attempt := 0; ; attempt++ {
		err := do()
		if err == nil {
			return nil
		}
		var te *TokenError
		if !errors.As(err, &te) || te.final || attempt >= s.cfg.MaxRetries {
			return err
		}
		if te.StatusCode != 0 && !retryable(te.StatusCode) {
			return err // 400, 401: retrying cannot help
		}
		wait, ok := s.cfg.waitFor(ctx, te.StatusCode, te.RetryAfter, attempt)
		if !ok {
			return err
		}
		s.cfg.Logger.InfoContext(ctx, "partnerclient: retrying "+endpoint+" request", "status", te.StatusCode, "error", te.Code, "wait", wait, "attempt", attempt+1)
		if serr := s.cfg.Sleep(ctx, wait); serr != nil {
			return &TokenError{Err: serr, revocation: te.revocation}
		}
	}
}

// authenticate adds the client's authentication to the form of a token or
// revocation request (RFC 7009 section 2.1: the same as at the token
// endpoint), and returns the Authorization header to send, if any.
func (s *TokenSource) authenticate(form url.Values) (authorization string, err error) {
	switch s.cfg.AuthStyle {
	case AuthTLSClient:
		// RFC 8705 section 2: the connection's certificate authenticates;
		// client_id names the client.
		form.Set("client_id", s.cfg.ClientID)
	case AuthForm:
		form.Set("client_id", s.cfg.ClientID)
		form.Set("client_secret", s.secret())
	case AuthPrivateKeyJWT:
		// RFC 7521 section 4.2 and RFC 7523 section 2.2; a new assertion,
		// with a new jti, for every request, retries included.
		a, err := newAssertion(s.signer(), s.cfg.Algorithm, s.cfg.KeyID, s.cfg.ClientID, s.cfg.AssertionAudience, s.cfg.Now(), rand.Reader)
		if err != nil {
			return "", err
		}
		form.Set("client_id", s.cfg.ClientID)
		form.Set("client_assertion_type", ClientAssertionType)
		form.Set("client_assertion", a)
	default:
		// RFC 6749 section 2.3.1: form-urlencode id and secret, then Basic.
		cred := url.QueryEscape(s.cfg.ClientID) + ":" + url.QueryEscape(s.secret())
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(cred)), nil
	}
	return "", nil
}

// post sends form, with the client's authentication, to an OAuth endpoint
// and reads its answer. A non-200 answer is a *TokenError with the OAuth
// error (RFC 6749 section 5.2); so is every other failure. No error holds
// the form: it carries the secret or the assertion.
func (s *TokenSource) post(ctx context.Context, endpoint string, form url.Values, revocation bool) (*http.Response, []byte, error) {
	authorization, err := s.authenticate(form)
	if err != nil {
		return nil, nil, &TokenError{Err: err, revocation: revocation, final: true}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, nil, &TokenError{Err: errors.New("building the request failed"), revocation: revocation} // never echo the form
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if !revocation {
		if err := s.dpopTokenRequest(req); err != nil {
			return nil, nil, &TokenError{Err: err, final: true}
		}
	}
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		// *url.Error names the URL and the cause, never the body or header.
		return nil, nil, &TokenError{Err: err, revocation: revocation}
	}
	defer resp.Body.Close()
	nonce := s.dpopAnswer(req.URL, resp)
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return nil, nil, &TokenError{StatusCode: resp.StatusCode, Err: fmt.Errorf("reading the answer: %w", err), revocation: revocation}
	}
	if resp.StatusCode != http.StatusOK {
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		_ = json.Unmarshal(data, &oe)
		return nil, nil, &TokenError{StatusCode: resp.StatusCode, Code: oe.Error, Description: oe.Description,
			RetryAfter: retryAfter(resp.Header, s.cfg.Now), revocation: revocation, nonce: nonce}
	}
	return resp, data, nil
}

// request sends one token request (RFC 6749 section 4.4.2).
func (s *TokenSource) request(ctx context.Context, start time.Time) (*oauth2.Token, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(s.cfg.Scopes) > 0 {
		form.Set("scope", strings.Join(s.cfg.Scopes, " "))
	}
	resp, data, err := s.post(ctx, s.cfg.TokenURL, form, false)
	if retryWithNonce(err) {
		// RFC 9449 section 8: once more, with the nonce just given.
		resp, data, err = s.post(ctx, s.cfg.TokenURL, form, false)
	}
	if err != nil {
		return nil, err
	}
	var tr tokenResponse
	if err := json.Unmarshal(data, &tr); err != nil || tr.AccessToken == "" {
		return nil, &TokenError{StatusCode: resp.StatusCode, Err: errors.New("the answer holds no access_token")}
	}
	tokenType := "Bearer"
	switch {
	case strings.EqualFold(tr.TokenType, "Bearer"):
	case s.dpop != nil && strings.EqualFold(tr.TokenType, TokenTypeDPoP):
		tokenType = TokenTypeDPoP // RFC 9449 section 5: bound to DPoPKey
	case s.dpop != nil:
		return nil, &TokenError{StatusCode: resp.StatusCode, Err: fmt.Errorf("token_type %q, want DPoP or Bearer", tr.TokenType)}
	default:
		return nil, &TokenError{StatusCode: resp.StatusCode, Err: fmt.Errorf("token_type %q, want Bearer", tr.TokenType)}
	}
	if tr.ExpiresIn <= 0 {
		return nil, &TokenError{StatusCode: resp.StatusCode, Err: errors.New("the answer holds no positive expires_in")}
	}
	tok := &oauth2.Token{
		AccessToken: tr.AccessToken, TokenType: tokenType, ExpiresIn: tr.ExpiresIn,
		// Expiry counts from when the request was sent, not answered: a
		// slow answer makes the token renew early, never late.
		Expiry: start.Add(time.Duration(tr.ExpiresIn) * time.Second),
	}
	return tok.WithExtra(map[string]any{"scope": tr.Scope}), nil
}
