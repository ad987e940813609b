package tokenserver

import (
	"context"
	"testing"

	"github.com/go-oauth2/oauth2/v4"
	oauthErrors "github.com/go-oauth2/oauth2/v4/errors"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestClientStore: go-oauth2's client store is the registry. Any active
// client is returned as read from Redis (confidential, no secret to
// compare, its credential never let through by go-oauth2's own check);
// unknown, malformed and revoked ids are go-oauth2's ErrInvalidClient
// itself.
func TestClientStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	rotated, _ := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	c, _, err := e.store.RotateSecret(ctx, rotated)
	if err != nil {
		t.Fatal(err)
	}
	revoked, _ := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	if _, err := e.store.Revoke(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	store := &registryClients{reg: e.store}

	for _, tc := range []struct {
		id  string
		gen int64
	}{{id, 1}, {rotated, c.Generation}} {
		ci, err := store.GetByID(ctx, tc.id)
		if err != nil {
			t.Fatalf("GetByID(%s): %v", tc.id, err)
		}
		rc := ci.(*registeredClient)
		if rc.GetID() != tc.id || rc.GetSecret() != "" || rc.GetDomain() != "" || rc.IsPublic() || rc.GetUserID() != "" ||
			rc.generation != tc.gen || rc.authenticated || rc.VerifyPassword(secret) || rc.VerifyPassword("") {
			t.Errorf("GetByID(%s) = %+v; want the registry's client at generation %d, confidential, never verified by go-oauth2", tc.id, *rc, tc.gen)
		}
	}
	for name, id := range map[string]string{"malformed": "nobody", "revoked": revoked} {
		if ci, err := store.GetByID(ctx, id); err != oauthErrors.ErrInvalidClient || ci != nil {
			t.Errorf("GetByID(%s) = %v, %v; want nil, ErrInvalidClient", name, ci, err)
		}
	}
	// id in a registry that never had it (a key prefix of its own).
	elsewhere := &registryClients{reg: clients.NewStore(e.rdb, redistest.Prefix(t, e.rdb), nil)}
	if ci, err := elsewhere.GetByID(ctx, id); err != oauthErrors.ErrInvalidClient || ci != nil {
		t.Errorf("GetByID(unknown) = %v, %v; want nil, ErrInvalidClient", ci, err)
	}
}

// TestClientStoreRequestRead: for the client the request authenticated,
// the store answers the read that authentication made, with no Redis round
// trip (its registry's Redis is unreachable here); any other id goes to
// the registry, whose outage is answered 503; and go-oauth2's Manager,
// bound to that read, issues to that client only.
func TestClientStoreRequestRead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	id, _ := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	other, _ := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	const jkt = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs" // RFC 7638 section 3.1
	read := registeredClient{id: id, authenticated: true, generation: 7, secretID: 2, jkt: jkt}

	// A closed client: every command fails at once, as with Redis gone.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	if err := down.Close(); err != nil {
		t.Fatal(err)
	}
	offline := &registryClients{reg: clients.NewStore(down, redistest.Prefix(t, e.rdb), nil), read: read}
	ci, err := offline.GetByID(ctx, id)
	if err != nil {
		t.Fatalf("GetByID(the request's client): %v", err)
	}
	if got := *ci.(*registeredClient); got != read || !ci.(*registeredClient).VerifyPassword("") {
		t.Errorf("GetByID(the request's client) = %+v, want the request's read %+v, verified", got, read)
	}
	_, err = offline.GetByID(ctx, other)
	if oe, _ := toOAuth(err); !clients.IsUnavailable(err) || oe != errTemporarilyUnavailable {
		t.Errorf("GetByID(another client) with Redis down = %v (answered %v), want the registry's outage, 503", err, oe)
	}

	tgr := func(client string) *oauth2.TokenGenerateRequest {
		return &oauth2.TokenGenerateRequest{ClientID: client, Scope: clients.ScopePatientsRead}
	}
	if ti, err := e.srv.managers.generate(ctx, read, tgr(other)); err != oauthErrors.ErrInvalidClient || ti != nil {
		t.Errorf("generate for another client = %v, %v; want nil, ErrInvalidClient", ti, err)
	}
	if ti, err := e.srv.managers.generate(ctx, registeredClient{}, tgr(id)); err != oauthErrors.ErrInvalidClient || ti != nil {
		t.Errorf("generate without an authenticated read = %v, %v; want nil, ErrInvalidClient", ti, err)
	}
	ti, err := e.srv.managers.generate(ctx, read, tgr(id))
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	_, claims := tokenParts(t, ti.GetAccess())
	cnf, _ := claims["cnf"].(map[string]any)
	if claims["client_id"] != id || claims["gen"] != float64(7) || claims["secret_id"] != float64(2) || cnf["jkt"] != jkt || claims["scope"] != clients.ScopePatientsRead {
		t.Errorf("issued claims %v; want the read's client, gen 7, secret_id 2, cnf.jkt %s, scope %s", claims, jkt, clients.ScopePatientsRead)
	}
}
