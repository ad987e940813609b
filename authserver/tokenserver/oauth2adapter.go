package tokenserver

// This file is the whole of go-oauth2 in the token service. go-oauth2 runs
// the client credentials grant's bookkeeping and formats its answer (RFC
// 6749 sections 4.4.2 and 5.1); everything it does not do the way this
// service must (parsing, client authentication, scope, limits, errors: see
// ../shared/notes/libraries.md) happens before it is called, in one
// authentication path (authenticate.go), and it is handed the client that
// path let through. A reader can skip this file.

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/server"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// newOAuth builds the go-oauth2 server for the client credentials grant.
func newOAuth(keys *atomic.Pointer[keyState], now func() time.Time) *server.Server {
	m := manage.NewManager()
	m.SetClientTokenCfg(&manage.Config{AccessTokenExp: accesstoken.Lifetime})
	m.MapClientStorage(authenticatedClients{})
	m.MapTokenStorage(selfContained{})
	m.MapAccessGenerate(&generator{keys: keys, now: now})

	scfg := server.NewConfig()
	scfg.AllowedGrantTypes = []oauth2.GrantType{oauth2.ClientCredentials}
	srv := server.NewServer(scfg, m)
	srv.ClientInfoHandler = func(r *http.Request) (string, string, error) {
		a, ok := r.Context().Value(authenticatedKey{}).(*authenticated)
		if !ok {
			return "", "", oauthErrors.ErrInvalidClient
		}
		return a.id, "", nil
	}
	// go-oauth2 drops an empty scope from the response; the spec wants "".
	srv.ExtensionFieldsHandler = func(ti oauth2.TokenInfo) map[string]any {
		if ti.GetScope() == "" {
			return map[string]any{"scope": ""}
		}
		return nil
	}
	return srv
}

// authenticated is a client that authenticate let through, handed to
// go-oauth2 in the request's context.
type authenticated struct {
	id   string
	auth clients.Authentication
}

type authenticatedKey struct{}

// issue has go-oauth2 issue the token of an authenticated request and
// returns the 200 answer's body.
func (s *Server) issue(r *http.Request, req *clientRequest, auth clients.Authentication) (map[string]any, error) {
	// Hand go-oauth2 the parsed parameters only: it reads r.FormValue,
	// which would otherwise parse the body again and merge the query.
	r.Form, r.PostForm = req.Params, req.Params
	r = r.WithContext(context.WithValue(r.Context(), authenticatedKey{}, &authenticated{id: req.Client.ID, auth: auth}))
	gt, tgr, err := s.oauth.ValidationTokenRequest(r)
	if err != nil {
		return nil, err
	}
	ti, err := s.oauth.GetAccessToken(r.Context(), gt, tgr)
	if err != nil {
		return nil, err
	}
	return s.oauth.GetTokenData(ti), nil
}

// authenticatedClients is go-oauth2's client store: it knows the one client
// authenticate let through for the request, and no other.
type authenticatedClients struct{}

var _ oauth2.ClientStore = authenticatedClients{}

func (authenticatedClients) GetByID(ctx context.Context, id string) (oauth2.ClientInfo, error) {
	a, ok := ctx.Value(authenticatedKey{}).(*authenticated)
	if !ok || a.id != id {
		return nil, oauthErrors.ErrInvalidClient
	}
	return a, nil
}

var _ oauth2.ClientPasswordVerifier = (*authenticated)(nil)

func (a *authenticated) GetID() string     { return a.id }
func (a *authenticated) GetSecret() string { return "" }
func (a *authenticated) GetDomain() string { return "" }
func (a *authenticated) IsPublic() bool    { return false }
func (a *authenticated) GetUserID() string { return "" }

// VerifyPassword: the secret was checked by authenticate, in Redis; without
// this verifier go-oauth2 would compare secrets with != itself.
func (a *authenticated) VerifyPassword(string) bool { return true }

// selfContained is the token store of self-contained tokens: go-oauth2
// always calls Create, and there is nothing to keep, since a token's
// validity is its signature plus the client's state in Redis.
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
// scope authenticate granted and the client's credential generation.
type generator struct {
	keys *atomic.Pointer[keyState] // the server's; see UseKeys
	now  func() time.Time
}

var _ oauth2.AccessGenerate = (*generator)(nil)

func (g *generator) Token(_ context.Context, data *oauth2.GenerateBasic, _ bool) (string, string, error) {
	a, ok := data.Client.(*authenticated)
	if !ok {
		return "", "", errServer
	}
	granted := strings.Join(a.auth.Scopes, " ")
	issuer := g.keys.Load().issuer
	if issuer == nil { // the signing key is withdrawn
		return "", "", errNoSigningKey
	}
	token, _, err := issuer.Issue(accesstoken.Grant{ClientID: a.id, Scope: granted, Generation: a.auth.Generation, SecretID: a.auth.SecretID, Now: g.now()})
	if err != nil {
		return "", "", err
	}
	data.TokenInfo.SetScope(granted)
	return token, "", nil
}
