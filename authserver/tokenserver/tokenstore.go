package tokenserver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/models"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// tokenRevoker is what the token store needs of the registry: the one
// revocation of a token (RFC 7009), read by every admission.
type tokenRevoker interface {
	RevokeToken(ctx context.Context, t clients.TokenRef, expires time.Time) error
}

// selfContained is go-oauth2's token store for this service's tokens,
// which are self-contained: a token is its signature, checked by the token
// verifier against the published keys, plus the client's state in Redis
// (its credential generation, the secret it came from, revocation marks),
// read by whoever admits the token. There is no token record: nothing is
// written on issue, and every method means what go-oauth2's TokenStore says
// of it in those terms. Authorization codes and refresh tokens do not
// exist for the client credentials grant (RFC 6749 section 4.4.3): their
// methods answer go-oauth2's own sentinel for one that is not found.
// handleRevoke revokes through revoke, as RemoveByAccess does.
type selfContained struct {
	tokens tokenVerifier
	reg    tokenRevoker
}

var _ oauth2.TokenStore = selfContained{}

// Create records nothing: the issued token carries all it says, and the
// client's state it depends on is already in Redis.
func (selfContained) Create(context.Context, oauth2.TokenInfo) error { return nil }

// GetByAccess returns the information of access as its signature proves
// it (the token verifier: signature, issuer, audience, lifetime, its key
// still published), the same fields the Manager's token info had when the
// token was issued: client, scope, the token, its iat and exp - iat. A
// token the verifier refuses is go-oauth2's ErrInvalidAccessToken. The
// client's state is not read here: a token of a rotated or revoked client,
// or one revoked itself (RemoveByAccess), is still returned, and refused
// where it is used, by the round trip each use makes (clients.Store.AdmitAPI
// on the APIs, the caller's authentication at introspection).
func (s selfContained) GetByAccess(ctx context.Context, access string) (oauth2.TokenInfo, error) {
	claims, err := s.verify(ctx, access)
	if err != nil {
		return nil, err
	}
	ti := models.NewToken()
	ti.SetClientID(claims.ClientID)
	ti.SetScope(claims.Scope)
	ti.SetAccess(access)
	ti.SetAccessCreateAt(time.Unix(claims.IssuedAt, 0))
	ti.SetAccessExpiresIn(time.Duration(claims.ExpiresAt-claims.IssuedAt) * time.Second)
	return ti, nil
}

// RemoveByAccess revokes access (RFC 7009 section 2): from its return on,
// every admission refuses it, on every replica. A token the verifier
// refuses is nothing to remove (section 2.2: answered as a revoked one), as
// go-oauth2's own stores answer the removal of a token they do not hold.
func (s selfContained) RemoveByAccess(ctx context.Context, access string) error {
	claims, err := s.verify(ctx, access)
	if err == oauthErrors.ErrInvalidAccessToken {
		return nil
	}
	if err != nil {
		return err
	}
	return s.revoke(ctx, claims)
}

// GetByCode: this grant has no authorization codes.
func (selfContained) GetByCode(context.Context, string) (oauth2.TokenInfo, error) {
	return nil, oauthErrors.ErrInvalidAuthorizeCode
}

// RemoveByCode: this grant has no authorization codes.
func (selfContained) RemoveByCode(context.Context, string) error {
	return oauthErrors.ErrInvalidAuthorizeCode
}

// GetByRefresh: this grant has no refresh tokens.
func (selfContained) GetByRefresh(context.Context, string) (oauth2.TokenInfo, error) {
	return nil, oauthErrors.ErrInvalidRefreshToken
}

// RemoveByRefresh: this grant has no refresh tokens.
func (selfContained) RemoveByRefresh(context.Context, string) error {
	return oauthErrors.ErrInvalidRefreshToken
}

// verify returns the claims of access: go-oauth2's ErrInvalidAccessToken,
// unwrapped, for a token the verifier refuses; clients.ErrUnavailable
// (answered 503) when the key set could not be read.
func (s selfContained) verify(ctx context.Context, access string) (*accesstoken.Claims, error) {
	claims, err := s.tokens.VerifyContext(ctx, access)
	switch {
	case errors.Is(err, accesstoken.ErrInvalidToken):
		return nil, oauthErrors.ErrInvalidAccessToken
	case err != nil:
		return nil, fmt.Errorf("%w: %w", clients.ErrUnavailable, err)
	}
	return claims, nil
}

// revoke revokes the verified token of claims until it would have expired.
func (s selfContained) revoke(ctx context.Context, claims *accesstoken.Claims) error {
	return s.reg.RevokeToken(ctx, clients.TokenRefOf(claims), time.Unix(claims.ExpiresAt, 0))
}
