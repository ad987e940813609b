package tokenserver

// This file is the whole of go-oauth2 in the token service. One
// manage.Manager, built by NewServer (newManager), runs the client
// credentials grant's bookkeeping (RFC 6749 section 4.4.3: the client, the
// scope and the lifetime of the token) and calls this service's access
// token generator, which records in go-oauth2's token info the times of the
// token it actually signed: expires_in is that token's exp - iat.
//
// What of go-oauth2 is used, and what is not and why (its defaults
// contradict the partner guides, resourceserver/apidocs/guides; README,
// "Dependencies"):
//
//   - used: manage.Manager.GenerateAccessToken, with its ClientStore (the
//     client this request authenticated, handed over in the request's
//     context), its client-credentials grant Config (the lifetime) and an
//     AccessGenerate (generator, signing with jwx);
//   - not used: its HTTP layer (server.Server), because it reads only
//     r.FormValue (no JSON body, query parameters merged in, repeated
//     parameters accepted), authenticates clients before checking scope and
//     without a constant-time compare, and has no slow_down: parsing,
//     client authentication, scope, limits and error answers happen before
//     the Manager is called, in one authentication path (authenticate.go);
//   - not used: its token storage. The Manager calls TokenStore.Create on
//     every token it generates (and panics without a store), and nothing
//     else on the path used here; a token is self-contained (its signature
//     plus the client's state in Redis), so there is nothing to store and
//     selfContained implements Create alone;
//   - not used: its generators (golang-jwt, re-parsing the key per token),
//     authorization codes, refresh tokens (none for this grant, RFC 6749
//     section 4.4.3), its ClientPasswordVerifier (the secret was checked in
//     Redis, in constant time, by authenticate) and its error descriptions
//     (errors.go writes every error).

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/jsontext"
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

// appendJSON appends r's JSON, what json.Marshal writes of it (the keys in
// the struct's order; TestAnswerText, FuzzAnswerText): package jsontext
// says why by hand.
func (r tokenResponse) appendJSON(b []byte) []byte {
	b = append(b, `{"access_token":`...)
	b = jsontext.AppendHTMLString(b, r.AccessToken)
	b = append(b, `,"expires_in":`...)
	b = strconv.AppendInt(b, r.ExpiresIn, 10)
	b = append(b, `,"scope":`...)
	b = jsontext.AppendHTMLString(b, r.Scope)
	b = append(b, `,"token_type":`...)
	b = jsontext.AppendHTMLString(b, r.TokenType)
	return append(b, '}')
}

// newManager builds the server's one Manager: its client store is the
// client each request authenticated, its token store keeps nothing, its
// generator signs with the server's keys.
func newManager(gen *generator) *manage.Manager {
	m := manage.NewManager()
	// go-oauth2's default lifetime is 2 hours; the generator overwrites it
	// with the issued token's own (exp - iat), which is this one.
	m.SetClientTokenCfg(&manage.Config{AccessTokenExp: accesstoken.Lifetime})
	m.MapClientStorage(authenticatedClients{})
	m.MapTokenStorage(selfContained{})
	m.MapAccessGenerate(gen)
	return m
}

// issue has go-oauth2 issue the token of an authenticated request, with the
// scope authenticate granted, and returns the 200 answer's body.
func (s *Server) issue(ctx context.Context, req *clientRequest, auth clients.Authentication) (tokenResponse, error) {
	c := &authenticatedClient{id: req.Client.ID, generation: auth.Generation, secretID: auth.SecretID}
	tokenType := "Bearer" // RFC 6750 section 4
	if req.Proof != nil && req.Proof.Verified {
		// RFC 9449 section 5: bound to the proof's key (cnf.jkt, section
		// 6.1), and said so by its type.
		c.jkt, tokenType = req.Proof.Proof.JKT, "DPoP"
	}
	ctx = context.WithValue(ctx, authenticatedKey{}, c)
	ti, err := s.manager.GenerateAccessToken(ctx, oauth2.ClientCredentials, &oauth2.TokenGenerateRequest{
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
		TokenType:   tokenType,
	}, nil
}

// authenticatedKey is the context key of the request's authenticated
// client (an *authenticatedClient).
type authenticatedKey struct{}

// authenticatedClients is go-oauth2's client store: it knows the one client
// the request's context carries (put there by issue, after authenticate let
// it through) and no other, so no client record is read twice and no
// secret compared again.
type authenticatedClients struct{}

var _ oauth2.ClientStore = authenticatedClients{}

func (authenticatedClients) GetByID(ctx context.Context, id string) (oauth2.ClientInfo, error) {
	c, ok := ctx.Value(authenticatedKey{}).(*authenticatedClient)
	if !ok || c.id != id {
		return nil, oauthErrors.ErrInvalidClient
	}
	return c, nil
}

// authenticatedClient is a client authenticate let through. It is a
// confidential client (RFC 6749 section 2.1) without a secret to compare:
// go-oauth2 compares secrets only when the store gives one, and this one
// was checked by authenticate, in Redis.
type authenticatedClient struct {
	id         string
	generation int64
	// secretID is the secret it authenticated with (the token's secret_id).
	secretID int64
	// jkt is the thumbprint of the DPoP key its token is bound to ("" for
	// a bearer token).
	jkt string
}

var _ oauth2.ClientInfo = (*authenticatedClient)(nil)

func (c *authenticatedClient) GetID() string     { return c.id }
func (c *authenticatedClient) GetSecret() string { return "" }
func (c *authenticatedClient) GetDomain() string { return "" }
func (c *authenticatedClient) IsPublic() bool    { return false }
func (c *authenticatedClient) GetUserID() string { return "" }

// selfContained is the token store of self-contained tokens: Create, the
// only method GenerateAccessToken calls, keeps nothing. The other methods
// of oauth2.TokenStore (the embedded nil interface) serve go-oauth2 paths
// this service never calls (loading and removing stored tokens, codes).
type selfContained struct{ oauth2.TokenStore }

func (selfContained) Create(context.Context, oauth2.TokenInfo) error { return nil }

// generator signs the access token of the authenticated client with the
// scope the Manager was given and the client's credential generation, and
// sets the token info's creation time and lifetime to the signed token's
// iat and exp - iat.
type generator struct {
	keys signingKeys // the server's
	now  func() time.Time
}

var _ oauth2.AccessGenerate = (*generator)(nil)

func (g *generator) Token(_ context.Context, data *oauth2.GenerateBasic, _ bool) (string, string, error) {
	c, ok := data.Client.(*authenticatedClient)
	if !ok {
		return "", "", errServer
	}
	issuer := g.keys.Issuer()
	if issuer == nil { // the signing key is withdrawn
		return "", "", errNoSigningKey
	}
	token, claims, err := issuer.Issue(accesstoken.Grant{ClientID: c.id, Scope: data.TokenInfo.GetScope(), Generation: c.generation, SecretID: c.secretID, JKT: c.jkt, Now: g.now()})
	if err != nil {
		return "", "", err
	}
	data.TokenInfo.SetAccessCreateAt(time.Unix(claims.IssuedAt, 0))
	data.TokenInfo.SetAccessExpiresIn(time.Duration(claims.ExpiresAt-claims.IssuedAt) * time.Second)
	return token, "", nil
}
