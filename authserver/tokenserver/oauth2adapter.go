package tokenserver

// This file is the whole of go-oauth2 in the token service: its
// manage.Manager runs the client credentials grant's bookkeeping (RFC 6749
// section 4.4.3: the client, the scope and lifetime of the token) and calls
// this service's access token generator. Everything it does not do the way
// this service must (parsing, client authentication, scope, limits,
// errors: see ../shared/notes/libraries.md) happens before it is called, in
// one authentication path (authenticate.go), and it is handed the client
// that path let through. Its HTTP layer (server.Server) is not used: this
// package parses requests and writes answers itself. A reader can skip this
// file.

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// tokenResponse is the 200 answer of the token endpoint (RFC 6749 section
// 5.1). Its fields are in the order of their names, as the answer has
// always been written. The scope is always present, "" included: the
// granted scope may differ from the requested one (RFC 6749 section 3.3).
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	ExpiresIn   int64  `json:"expires_in"`
	Scope       string `json:"scope"`
	TokenType   string `json:"token_type"`
}

// issue has go-oauth2 issue the token of an authenticated request, with the
// scope authenticate granted, and returns the 200 answer's body.
//
// The Manager is built for the request: its client store is the one
// client authenticate let through (go-oauth2 looks the client up by id
// only, and this one carries its credential generation and secret id to
// the generator),
// so nothing is handed over in a context and no secret is compared again.
// A Manager is a handful of fields; the generator and token store are the
// server's.
func (s *Server) issue(r *http.Request, req *clientRequest, auth clients.Authentication) (tokenResponse, error) {
	m := manage.NewManager()
	// go-oauth2's default lifetime is 2 hours; it issues no refresh token
	// for this grant (RFC 6749 section 4.4.3).
	m.SetClientTokenCfg(&manage.Config{AccessTokenExp: accesstoken.Lifetime})
	m.MapClientStorage(authenticatedClient{id: req.Client.ID, generation: auth.Generation, secretID: auth.SecretID})
	m.MapTokenStorage(selfContained{})
	m.MapAccessGenerate(s.gen)
	ti, err := m.GenerateAccessToken(r.Context(), oauth2.ClientCredentials, &oauth2.TokenGenerateRequest{
		ClientID: req.Client.ID,
		Scope:    strings.Join(auth.Scopes, " "),
	})
	if err != nil {
		return tokenResponse{}, err
	}
	return tokenResponse{
		AccessToken: ti.GetAccess(),
		ExpiresIn:   int64(ti.GetAccessExpiresIn() / time.Second),
		Scope:       ti.GetScope(),
		TokenType:   "Bearer", // RFC 6750 section 4
	}, nil
}

// authenticatedClient is go-oauth2's client store and the client it holds:
// the one client authenticate let through, and no other. It is a
// confidential client (RFC 6749 section 2.1) without a secret to compare:
// go-oauth2 compares secrets only when the store gives one, and this one
// was checked by authenticate, in Redis.
type authenticatedClient struct {
	id         string
	generation int64
	// secretID is the secret it authenticated with (the token's secret_id).
	secretID int64
}

var (
	_ oauth2.ClientStore = authenticatedClient{}
	_ oauth2.ClientInfo  = authenticatedClient{}
)

func (c authenticatedClient) GetByID(_ context.Context, id string) (oauth2.ClientInfo, error) {
	if id != c.id {
		return nil, oauthErrors.ErrInvalidClient
	}
	return c, nil
}

func (c authenticatedClient) GetID() string     { return c.id }
func (c authenticatedClient) GetSecret() string { return "" }
func (c authenticatedClient) GetDomain() string { return "" }
func (c authenticatedClient) IsPublic() bool    { return false }
func (c authenticatedClient) GetUserID() string { return "" }

// selfContained is the token store of self-contained tokens. The Manager
// always calls Create on the token it generated (and panics without a
// store); there is nothing to keep, since a token's validity is its
// signature plus the client's state in Redis, so it stores nothing and
// finds nothing.
type selfContained struct{}

var _ oauth2.TokenStore = selfContained{}

func (selfContained) Create(context.Context, oauth2.TokenInfo) error { return nil }
func (selfContained) RemoveByCode(context.Context, string) error     { return nil }
func (selfContained) RemoveByAccess(context.Context, string) error   { return nil }
func (selfContained) RemoveByRefresh(context.Context, string) error  { return nil }
func (selfContained) GetByCode(context.Context, string) (oauth2.TokenInfo, error) {
	return nil, oauthErrors.ErrInvalidAuthorizeCode
}
func (selfContained) GetByAccess(context.Context, string) (oauth2.TokenInfo, error) {
	return nil, oauthErrors.ErrInvalidAccessToken
}
func (selfContained) GetByRefresh(context.Context, string) (oauth2.TokenInfo, error) {
	return nil, oauthErrors.ErrInvalidRefreshToken
}

// generator signs the access token of the authenticated client with the
// scope the Manager was given and the client's credential generation.
type generator struct {
	keys signingKeys // the server's
	now  func() time.Time
}

var _ oauth2.AccessGenerate = (*generator)(nil)

func (g *generator) Token(_ context.Context, data *oauth2.GenerateBasic, _ bool) (string, string, error) {
	c, ok := data.Client.(authenticatedClient)
	if !ok {
		return "", "", errServer
	}
	issuer := g.keys.Issuer()
	if issuer == nil { // the signing key is withdrawn
		return "", "", errNoSigningKey
	}
	token, _, err := issuer.Issue(accesstoken.Grant{ClientID: c.id, Scope: data.TokenInfo.GetScope(), Generation: c.generation, SecretID: c.secretID, Now: g.now()})
	if err != nil {
		return "", "", err
	}
	return token, "", nil
}
