package tokenserver

// This file and tokenstore.go are go-oauth2 in the token service: its
// manage.Manager runs the client credentials grant (RFC 6749 section 4.4)
// through go-oauth2's own interfaces, each implemented over this service's
// sources:
//
//   - oauth2.ClientStore (registryClients): the client registry. GetByID
//     returns any registered client from pkg/clients; for the client the
//     request authenticated it returns the registry's read of that client
//     made by the request's one authentication round trip (authenticate.go,
//     clients.Store.Authenticate), so issuing costs no second read
//     (BenchmarkTokenEndpoint);
//   - oauth2.ClientInfo and oauth2.ClientPasswordVerifier
//     (registeredClient): the Manager's own credential check asks it, and it
//     answers the authentication script's verdict;
//   - oauth2.AccessGenerate (generator): signs with jwx and records the
//     signed token's iat and exp - iat in go-oauth2's token info, so
//     expires_in is that token's own lifetime;
//   - oauth2.TokenStore (selfContained, tokenstore.go): tokens are
//     self-contained, read through the token verifier and revoked through
//     the registry's revocation;
//   - oauth2.ClientCredentials and go-oauth2's error sentinels, handed back
//     unwrapped.
//
// What of go-oauth2 is not used, and why (its defaults contradict the
// partner guides, resourceserver/apidocs/guides; decision record
// deploy/docs/decisions/0002-go-oauth2.md):
//
//   - its HTTP layer (server.Server): it reads only r.FormValue (no JSON
//     body, query parameters merged in, repeated parameters accepted),
//     authenticates clients after checking scope and without a
//     constant-time compare, and has no slow_down. Parsing, client
//     authentication, scope, limits and error answers happen before the
//     Manager is called, in one authentication path (authenticate.go), and
//     errors.go writes every error;
//   - its generators (golang-jwt, re-parsing the key per token), its
//     stores (memory and buntdb: shared state lives in Redis), authorization
//     codes and refresh tokens (none for this grant, RFC 6749 section
//     4.4.3).
//
// A Manager takes its client store once (MapClientStorage) and hands
// GetByID nothing of the request but its context. So that GetByID can serve
// the request's own read without a value smuggled through that context,
// each request is bound to a Manager of its own for the call: managers
// pools Managers, each mapped to its own registryClients, which the
// request fills and clears. Pooled, a binding allocates nothing
// (BenchmarkIssue's allocs/op); a Manager built per request would
// allocate the Manager and its grant map on every token.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/jsontext"
	"github.com/partnerapi/authplatform/pkg/tracing"
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

// clientTokenCfg is the client credentials grant's Config of every Manager:
// go-oauth2's default lifetime is 2 hours; the generator overwrites it with
// the issued token's own (exp - iat), which is this one.
var clientTokenCfg = &manage.Config{AccessTokenExp: accesstoken.Lifetime}

// managers are the server's go-oauth2 Managers, one bound to each request
// being issued a token at a time (the file's comment says why).
type managers struct{ pool sync.Pool }

// boundManager is a Manager whose client store is the registry as one
// request reads it.
type boundManager struct {
	m       *manage.Manager
	clients registryClients
}

func newManagers(reg clientRegistry, tokens oauth2.TokenStore, gen oauth2.AccessGenerate) *managers {
	ms := &managers{}
	ms.pool.New = func() any {
		b := &boundManager{m: manage.NewManager(), clients: registryClients{reg: reg}}
		b.m.SetClientTokenCfg(clientTokenCfg)
		b.m.MapClientStorage(&b.clients)
		b.m.MapTokenStorage(tokens)
		b.m.MapAccessGenerate(gen)
		return b
	}
	return ms
}

// generate has a Manager bound to read, the client the request
// authenticated, generate the access token of tgr. Nothing of go-oauth2
// keeps the client past the call (GenerateAccessToken returns the token
// info alone), so the binding is cleared and the Manager reused.
func (ms *managers) generate(ctx context.Context, read registeredClient, tgr *oauth2.TokenGenerateRequest) (oauth2.TokenInfo, error) {
	b := ms.pool.Get().(*boundManager)
	b.clients.read = read
	ti, err := b.m.GenerateAccessToken(ctx, oauth2.ClientCredentials, tgr)
	b.clients.read = registeredClient{}
	ms.pool.Put(b)
	return ti, err
}

// issue has go-oauth2 issue the token of an authenticated request, with the
// scope authenticate granted, and returns the 200 answer's body.
func (s *Server) issue(ctx context.Context, req *clientRequest, auth clients.Authentication) (tokenResponse, error) {
	read := registeredClient{id: req.Client.ID, authenticated: true, generation: auth.Generation, secretID: auth.SecretID}
	tokenType := "Bearer" // RFC 6750 section 4
	if req.Proof != nil && req.Proof.Verified {
		// RFC 9449 section 5: bound to the proof's key (cnf.jkt, section
		// 6.1), and said so by its type.
		read.jkt, tokenType = req.Proof.Proof.JKT, "DPoP"
	}
	// RFC 8705 section 3: bound to the connection's client certificate
	// (cnf.x5t#S256), whatever the method the client authenticated with
	// (mtls.go); its type stays Bearer (or DPoP).
	read.x5t = req.boundThumbprint()
	// ClientSecret stays empty: the secret was checked by the
	// authentication script and travels no further (registeredClient's
	// VerifyPassword).
	ti, err := s.managers.generate(ctx, read, &oauth2.TokenGenerateRequest{
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

// clientRegistry is what go-oauth2's client store reads of the registry.
type clientRegistry interface {
	GetClient(ctx context.Context, id string) (clients.Client, error)
}

// registryClients is go-oauth2's client store: the client registry
// (pkg/clients), with the registry's read of the client one request
// authenticated (read, set by managers.generate for that request only).
//
// The contract: clients.Store.Authenticate reads the client's record in
// the same script that checks its credential, and its Authentication is
// that read (the credential generation, the secret that matched), as of
// the moment the credential held. For that client GetByID returns this
// read rather than the record read again: a second read would cost a
// round trip on every token and could see a later generation than the one
// the credential was checked at, and the token must carry the one it was
// checked at (a rotation in between kills it, as it must). Any other id is
// read from the registry.
type registryClients struct {
	reg  clientRegistry
	read registeredClient
}

var _ oauth2.ClientStore = (*registryClients)(nil)

// GetByID returns the registered client id: go-oauth2's ErrInvalidClient,
// unwrapped (errors.go answers it invalid_client), when there is none or it
// is revoked (its credentials are gone for good); a registry outage as the
// registry reports it (answered 503).
func (c *registryClients) GetByID(ctx context.Context, id string) (oauth2.ClientInfo, error) {
	if c.read.authenticated && c.read.id == id {
		return &c.read, nil
	}
	rec, err := c.reg.GetClient(ctx, id)
	switch {
	case errors.Is(err, clients.ErrNotFound):
		return nil, oauthErrors.ErrInvalidClient
	case err != nil:
		return nil, err
	case rec.Status != clients.StatusActive:
		return nil, oauthErrors.ErrInvalidClient
	}
	return &registeredClient{id: rec.ID, generation: rec.Generation}, nil
}

// registeredClient is a client of the registry. Every registered client is
// confidential (RFC 6749 section 2.1: it holds a secret or keys) and has no
// redirection URI (the client credentials grant uses none); its secrets are
// at rest only as digests, so GetSecret is empty and the check of a
// credential is VerifyPassword's.
type registeredClient struct {
	id string
	// authenticated: this request's credential for the client was checked
	// and held (the registry's read made by that check).
	authenticated bool
	// generation is the client's credential generation (the token's gen).
	generation int64
	// secretID is the secret it authenticated with (the token's
	// secret_id); 0 unless authenticated.
	secretID int64
	// jkt is the thumbprint of the DPoP key its token is bound to ("" for
	// a bearer token).
	jkt string
	// x5t is the thumbprint of the client certificate its token is bound
	// to ("" for none).
	x5t string
}

var (
	_ oauth2.ClientInfo             = (*registeredClient)(nil)
	_ oauth2.ClientPasswordVerifier = (*registeredClient)(nil)
)

func (c *registeredClient) GetID() string     { return c.id }
func (c *registeredClient) GetSecret() string { return "" }
func (c *registeredClient) GetDomain() string { return "" }
func (c *registeredClient) IsPublic() bool    { return false }
func (c *registeredClient) GetUserID() string { return "" }

// VerifyPassword is go-oauth2's check of the client's credential
// (GenerateAccessToken asks it first). Credentials are checked only by the
// authentication script, in constant time and under the failure budgets
// (authenticate.go), never by go-oauth2 (which is handed no secret), so it
// answers that script's verdict: true for the client the request
// authenticated, false for a client only read from the registry, whatever
// is presented.
func (c *registeredClient) VerifyPassword(string) bool { return c.authenticated }

// generator signs the access token of the authenticated client with the
// scope the Manager was given and the client's credential generation, and
// sets the token info's creation time and lifetime to the signed token's
// iat and exp - iat.
type generator struct {
	keys signingKeys // the server's
	now  func() time.Time
}

var _ oauth2.AccessGenerate = (*generator)(nil)

func (g *generator) Token(ctx context.Context, data *oauth2.GenerateBasic, _ bool) (string, string, error) {
	c, ok := data.Client.(*registeredClient)
	if !ok || !c.authenticated {
		return "", "", errServer
	}
	issuer := g.keys.Issuer()
	if issuer == nil { // the signing key is withdrawn
		return "", "", errNoSigningKey
	}
	// The signature's span (a traced request only): no attribute, so that
	// nothing of the token reaches the trace.
	_, span := tracing.Start(ctx, tracing.SpanSign)
	token, claims, err := issuer.Issue(accesstoken.Grant{ClientID: c.id, Scope: data.TokenInfo.GetScope(), Generation: c.generation, SecretID: c.secretID, JKT: c.jkt, X5T: c.x5t, Now: g.now()})
	span.End()
	if err != nil {
		return "", "", err
	}
	data.TokenInfo.SetAccessCreateAt(time.Unix(claims.IssuedAt, 0))
	data.TokenInfo.SetAccessExpiresIn(time.Duration(claims.ExpiresAt-claims.IssuedAt) * time.Second)
	return token, "", nil
}
