package tokenserver

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/go-oauth2/oauth2/v4"
	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/go-oauth2/oauth2/v4/models"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// keysOf lists the env's Redis keys, sorted.
func (e *env) keysOf(t *testing.T) []string {
	t.Helper()
	keys, err := redistest.Keys(context.Background(), e.rdb, e.prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// TestTokenStoreCreate: issuing records nothing in Redis beyond what the
// token request itself counts (Create keeps nothing).
func TestTokenStoreCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	tok := e.token(t, e.url, id, secret, "")
	before := e.keysOf(t)
	ti := models.NewToken()
	ti.SetClientID(id)
	ti.SetAccess(tok)
	if err := e.srv.store.Create(context.Background(), ti); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if after := e.keysOf(t); !slices.Equal(before, after) {
		t.Errorf("Redis keys after Create:\n got %v\nwant %v", after, before)
	}
}

// TestTokenStoreGetByAccess: a token the verifier accepts is returned with
// what the Manager's token info said when it was issued; any other, an
// expired one included, is go-oauth2's ErrInvalidAccessToken itself.
func TestTokenStoreGetByAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead, clients.ScopeReferralsWrite)
	tok := e.token(t, e.url, id, secret, clients.ScopePatientsRead)
	_, claims := tokenParts(t, tok)
	ti, err := e.srv.store.GetByAccess(ctx, tok)
	if err != nil {
		t.Fatalf("GetByAccess: %v", err)
	}
	iat := time.Unix(int64(claims["iat"].(float64)), 0)
	if ti.GetClientID() != id || ti.GetScope() != clients.ScopePatientsRead || ti.GetAccess() != tok ||
		!ti.GetAccessCreateAt().Equal(iat) || ti.GetAccessExpiresIn() != accesstoken.Lifetime ||
		ti.GetUserID() != "" || ti.GetRefresh() != "" || ti.GetCode() != "" {
		t.Errorf("GetByAccess: client %q scope %q access %v created %v lasting %v user %q refresh %q code %q; want %q %q true %v %v and the rest empty",
			ti.GetClientID(), ti.GetScope(), ti.GetAccess() == tok, ti.GetAccessCreateAt(), ti.GetAccessExpiresIn(),
			ti.GetUserID(), ti.GetRefresh(), ti.GetCode(), id, clients.ScopePatientsRead, iat, accesstoken.Lifetime)
	}
	forged := tamper(t, tok, func(c map[string]any) { c["scope"] = clients.ScopeReferralsWrite })
	for name, access := range map[string]string{"empty": "", "garbage": "svc_at_nope", "forged": forged} {
		if ti, err := e.srv.store.GetByAccess(ctx, access); err != oauthErrors.ErrInvalidAccessToken || ti != nil {
			t.Errorf("GetByAccess(%s) = %v, %v; want nil, ErrInvalidAccessToken", name, ti, err)
		}
	}
	e.now.Add(accesstoken.Lifetime + time.Hour)
	if ti, err := e.srv.store.GetByAccess(ctx, tok); err != oauthErrors.ErrInvalidAccessToken || ti != nil {
		t.Errorf("GetByAccess(expired) = %v, %v; want nil, ErrInvalidAccessToken", ti, err)
	}
}

// TestTokenStoreRemoveByAccess: removing a token revokes it (introspection
// answers it inactive from then on, the caller's other token stays
// active); removing an invalid one is nothing and writes nothing. What
// GetByAccess says of a removed token is what its comment says: its
// signature still proves it, its standing is read where it is used.
func TestTokenStoreRemoveByAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	tok, other := e.token(t, e.url, id, secret, ""), e.token(t, e.url, id, secret, "")
	wantJSON(t, introspect(t, e.url, id, secret, tok), activeBody(t, tok))

	before := e.keysOf(t)
	if err := e.srv.store.RemoveByAccess(ctx, "svc_at_nope"); err != nil {
		t.Errorf("RemoveByAccess(garbage) = %v, want nil", err)
	}
	if after := e.keysOf(t); !slices.Equal(before, after) {
		t.Errorf("Redis keys after removing garbage:\n got %v\nwant %v", after, before)
	}

	if err := e.srv.store.RemoveByAccess(ctx, tok); err != nil {
		t.Fatalf("RemoveByAccess: %v", err)
	}
	wantJSON(t, introspect(t, e.url, id, secret, tok), bodyInactive)
	wantJSON(t, introspect(t, e.url, id, secret, other), activeBody(t, other))
	if err := e.srv.store.RemoveByAccess(ctx, tok); err != nil {
		t.Errorf("RemoveByAccess again = %v, want nil", err)
	}
	if ti, err := e.srv.store.GetByAccess(ctx, tok); err != nil || ti.GetAccess() != tok {
		t.Errorf("GetByAccess(removed) = %v, %v; want its information", ti, err)
	}
}

// TestTokenStoreCodesAndRefreshTokens: the client credentials grant has
// neither (RFC 6749 section 4.4.3): every lookup and removal is go-oauth2's
// own not-found sentinel, whatever is asked.
func TestTokenStoreCodesAndRefreshTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	tok := e.token(t, e.url, id, secret, "")
	for _, v := range []string{"", "code", tok} {
		if ti, err := e.srv.store.GetByCode(ctx, v); err != oauthErrors.ErrInvalidAuthorizeCode || ti != nil {
			t.Errorf("GetByCode(%.12q) = %v, %v", v, ti, err)
		}
		if err := e.srv.store.RemoveByCode(ctx, v); err != oauthErrors.ErrInvalidAuthorizeCode {
			t.Errorf("RemoveByCode(%.12q) = %v", v, err)
		}
		if ti, err := e.srv.store.GetByRefresh(ctx, v); err != oauthErrors.ErrInvalidRefreshToken || ti != nil {
			t.Errorf("GetByRefresh(%.12q) = %v, %v", v, ti, err)
		}
		if err := e.srv.store.RemoveByRefresh(ctx, v); err != oauthErrors.ErrInvalidRefreshToken {
			t.Errorf("RemoveByRefresh(%.12q) = %v", v, err)
		}
	}
}

// TestManagerOverTokenStore: the server's go-oauth2 Manager answers every
// call through its stores, none panics: it loads and removes access tokens
// through the token store, and refuses refresh tokens and codes with its
// own sentinels.
func TestManagerOverTokenStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	tok := e.token(t, e.url, id, secret, "")
	b := e.srv.managers.pool.Get().(*boundManager)
	defer e.srv.managers.pool.Put(b)

	if ti, err := b.m.LoadAccessToken(ctx, tok); err != nil || ti.GetClientID() != id {
		t.Errorf("LoadAccessToken = %v, %v; want client %s's token", ti, err, id)
	}
	if _, err := b.m.LoadRefreshToken(ctx, "r"); err != oauthErrors.ErrInvalidRefreshToken {
		t.Errorf("LoadRefreshToken = %v", err)
	}
	if _, err := b.m.RefreshAccessToken(ctx, &oauth2.TokenGenerateRequest{ClientID: id, Refresh: "r"}); err != oauthErrors.ErrInvalidRefreshToken {
		t.Errorf("RefreshAccessToken = %v", err)
	}
	if err := b.m.RemoveRefreshToken(ctx, "r"); err != oauthErrors.ErrInvalidRefreshToken {
		t.Errorf("RemoveRefreshToken = %v", err)
	}
	code := &oauth2.TokenGenerateRequest{ClientID: id, Code: "c"}
	if _, err := b.m.GenerateAccessToken(ctx, oauth2.AuthorizationCode, code); err != oauthErrors.ErrInvalidClient {
		t.Errorf("GenerateAccessToken(authorization_code) of a client not authenticated = %v, want ErrInvalidClient", err)
	}
	b.clients.read = registeredClient{id: id, authenticated: true, generation: 1, secretID: 1}
	_, err := b.m.GenerateAccessToken(ctx, oauth2.AuthorizationCode, code)
	b.clients.read = registeredClient{}
	if err != oauthErrors.ErrInvalidAuthorizeCode {
		t.Errorf("GenerateAccessToken(authorization_code) = %v, want ErrInvalidAuthorizeCode", err)
	}
	if err := b.m.RemoveAccessToken(ctx, tok); err != nil {
		t.Fatalf("RemoveAccessToken: %v", err)
	}
	wantJSON(t, introspect(t, e.url, id, secret, tok), bodyInactive)
	r := post(t, e.url+PathRevoke, formType, form("token", tok), basic(id, secret))
	wantStatus(t, r, http.StatusOK)
}
