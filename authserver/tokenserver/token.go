package tokenserver

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/server"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// registry is what the token service needs of the client registry.
type registry interface {
	Credential(ctx context.Context, id string) (*clients.Credential, error)
	AdmitToken(ctx context.Context, id string, generation int64, now func() time.Time) (clients.TokenAdmission, error)
}

// maxScopeTokens bounds the scopes one request may name; there are four.
const maxScopeTokens = 16

// newOAuth builds the go-oauth2 server for the client credentials grant.
func newOAuth(reg registry, issuer *accesstoken.Issuer, cfg Config) *server.Server {
	m := manage.NewManager()
	m.SetClientTokenCfg(&manage.Config{AccessTokenExp: accesstoken.Lifetime})
	m.MapClientStorage(clientStore{reg: reg})
	m.MapTokenStorage(selfContained{})
	m.MapAccessGenerate(&generator{reg: reg, issuer: issuer, now: cfg.Now, rateNow: cfg.RateNow})

	scfg := server.NewConfig()
	scfg.AllowedGrantTypes = []oauth2.GrantType{oauth2.ClientCredentials}
	srv := server.NewServer(scfg, m)
	srv.ClientInfoHandler = func(r *http.Request) (string, string, error) {
		creds, ok := r.Context().Value(credsKey{}).(credentials)
		if !ok || !creds.Present {
			return "", "", oauthErrors.ErrInvalidClient
		}
		return creds.ID, creds.Secret, nil
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

type credsKey struct{}

// handleToken serves POST /api/v1/oauth/token/ (RFC 6749 sections 4.4, 5).
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if s.blocked(ctx, w, r) {
		return // answered 429
	}
	req, err := parseClientRequest(r)
	if err != nil {
		s.tokenError(ctx, w, r, credentials{}, err)
		return
	}
	// RFC 6749 section 3.2: a parameter sent without a value is treated as
	// omitted, so "grant_type=" is a missing grant type.
	switch gt := req.Params.Get("grant_type"); {
	case gt == "":
		s.tokenError(ctx, w, r, req.Client, invalidRequest("grant_type is required"))
		return
	case gt != string(oauth2.ClientCredentials):
		s.tokenError(ctx, w, r, req.Client, errUnsupportedGrant)
		return
	}
	if !req.Client.Present {
		s.tokenError(ctx, w, r, req.Client, errInvalidClient)
		return
	}
	annotate(ctx, slog.String("client_id", loggableID(req.Client.ID)))

	// Hand go-oauth2 the parsed parameters only: it reads r.FormValue,
	// which would otherwise parse the body again and merge the query.
	r.Form, r.PostForm = req.Params, req.Params
	r = r.WithContext(context.WithValue(ctx, credsKey{}, req.Client))
	gt, tgr, err := s.oauth.ValidationTokenRequest(r)
	if err == nil {
		var ti oauth2.TokenInfo
		if ti, err = s.oauth.GetAccessToken(r.Context(), gt, tgr); err == nil {
			writeJSON(w, http.StatusOK, noStore(), s.oauth.GetTokenData(ti))
			s.metrics.TokenIssued()
			return
		}
	}
	s.tokenError(ctx, w, r, req.Client, err)
}

func (s *Server) tokenError(ctx context.Context, w http.ResponseWriter, r *http.Request, creds credentials, err error) {
	oe, _ := toOAuth(err)
	if oe == errInvalidClient {
		s.countFailure(ctx, r)
	}
	s.metrics.Refused(endpointOf(r), oe.Code)
	writeOAuthError(ctx, s.log, w, creds, err)
}

// loggableID keeps a presented client id out of the logs unless it has the
// form of one: a secret pasted into the id field must never be logged.
func loggableID(id string) string {
	if clients.ValidClientID(id) {
		return id
	}
	return "(malformed)"
}

// clientStore adapts the registry to go-oauth2's ClientStore.
type clientStore struct{ reg registry }

var _ oauth2.ClientStore = clientStore{}

// GetByID returns a client for every id, known or not, so that unknown,
// revoked and active clients all reach the same hash-and-compare in
// VerifyPassword (no timing oracle). A Redis failure is returned as is and
// answered 503.
func (s clientStore) GetByID(ctx context.Context, id string) (oauth2.ClientInfo, error) {
	cred, err := s.reg.Credential(ctx, id)
	if err != nil {
		return nil, err
	}
	return &clientInfo{cred: cred}, nil
}

// clientInfo is a registry credential as go-oauth2 sees it.
type clientInfo struct{ cred *clients.Credential }

var _ oauth2.ClientPasswordVerifier = (*clientInfo)(nil)

func (c *clientInfo) GetID() string     { return c.cred.ClientID }
func (c *clientInfo) GetSecret() string { return "" }
func (c *clientInfo) GetDomain() string { return "" }
func (c *clientInfo) IsPublic() bool    { return false }
func (c *clientInfo) GetUserID() string { return "" }

// VerifyPassword compares digests in constant time (go-oauth2 would
// otherwise compare secrets with != and accept any secret for an empty one).
func (c *clientInfo) VerifyPassword(secret string) bool { return c.cred.Matches(secret) }

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

// generator issues the access token. go-oauth2 calls it only after the
// secret was verified, which is why scope narrowing and the per-client
// limit live here: a wrong secret never learns what a client holds.
type generator struct {
	reg     registry
	issuer  *accesstoken.Issuer
	now     func() time.Time
	rateNow func() time.Time
}

var _ oauth2.AccessGenerate = (*generator)(nil)

func (g *generator) Token(ctx context.Context, data *oauth2.GenerateBasic, _ bool) (string, string, error) {
	ci, ok := data.Client.(*clientInfo)
	if !ok {
		return "", "", errServer
	}
	cred := ci.cred
	granted, err := narrowScope(cred.Scopes, data.TokenInfo.GetScope())
	if err != nil {
		return "", "", err
	}
	adm, err := g.reg.AdmitToken(ctx, cred.ClientID, cred.Generation, g.rateNow)
	if err != nil {
		return "", "", err
	}
	switch adm.Outcome {
	case clients.Dead: // rotated or revoked since the secret was checked
		return "", "", errInvalidClient
	case clients.Limited:
		return "", "", &slowDown{retryAfter: adm.Decision.RetryAfterSeconds()}
	}
	token, _, err := g.issuer.Issue(accesstoken.Grant{ClientID: cred.ClientID, Scope: granted, Generation: cred.Generation, Now: g.now()})
	if err != nil {
		return "", "", err
	}
	data.TokenInfo.SetScope(granted)
	return token, "", nil
}

// narrowScope returns the granted scope for a requested one (RFC 6749
// section 3.3): omitted means every scope the client holds; otherwise each
// requested scope must be held. The result is in the catalogue's order.
func narrowScope(held []string, requested string) (string, error) {
	if strings.Trim(requested, " ") == "" {
		return canonical(held, held), nil
	}
	parts := strings.Split(requested, " ")
	if len(parts) > maxScopeTokens {
		return "", errInvalidScope
	}
	var want []string
	for _, p := range parts {
		if p == "" {
			continue
		}
		if !validScopeToken(p) || !slices.Contains(held, p) {
			return "", errInvalidScope
		}
		want = append(want, p)
	}
	return canonical(held, want), nil
}

// validScopeToken: scope-token = 1*NQCHAR (RFC 6749 section 3.3).
func validScopeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
			return false
		}
	}
	return true
}

func canonical(held, want []string) string {
	var out []string
	for _, sc := range clients.AllScopes {
		if slices.Contains(want, sc) && slices.Contains(held, sc) {
			out = append(out, sc)
		}
	}
	return strings.Join(out, " ")
}
