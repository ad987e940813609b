package partnerclient

import (
	"context"
	"errors"
	"net/url"
)

// Revoke revokes an access token of this client at the revocation endpoint
// (RFC 7009 section 2.1): it POSTs token and token_type_hint=access_token
// to Config.RevocationURL (default BaseURL + DefaultRevocationPath), with
// the client authentication of token requests (HTTP Basic, form fields or a
// fresh client assertion). It retries 429, 5xx and failed connections as
// token requests do.
//
// The server answers 200 whether the token was revoked or was already
// invalid or unknown (RFC 7009 section 2.2), so nil means the token is no
// longer usable. An error answer is a *TokenError with the OAuth error,
// such as "invalid_client" or "unsupported_token_type" (section 2.2.1).
// Revoke does not touch the cache: see RevokeCached.
func (s *TokenSource) Revoke(ctx context.Context, token string) error {
	if token == "" {
		return &TokenError{Err: errors.New("no token to revoke"), revocation: true}
	}
	if s.cfg.RevocationURL == "" {
		return &TokenError{Err: errors.New("no revocation endpoint: set BaseURL or RevocationURL"), revocation: true}
	}
	return s.retry(ctx, "revocation", func() error {
		form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
		_, _, err := s.post(ctx, s.cfg.RevocationURL, form, true)
		return err
	})
}

// RevokeCached drops the cached token, if any, and revokes it (Revoke): a
// client shutting down, or one that suspects its token leaked, ends the
// token's life instead of leaving it valid until it expires. The next
// Token call gets a new token. The token is dropped even when revoking it
// fails. With no token cached it does nothing and returns nil; a token
// request in flight when it is called may cache a token after it.
func (s *TokenSource) RevokeCached(ctx context.Context) error {
	s.mu.Lock()
	tok := s.tok
	s.tok = nil
	s.mu.Unlock()
	if tok == nil || !s.cfg.Now().Before(tok.Expiry) {
		return nil // none, or expired: nothing left to revoke
	}
	return s.Revoke(ctx, tok.AccessToken)
}
