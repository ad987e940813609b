package tokenserver

import (
	"net/http"
	"testing"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// TestKeyWithdrawal: the authority's Use with a withdrawn key stops publishing it and
// makes its tokens inactive at once, including tokens whose verification
// was cached; the new signing key signs. With the signing key itself
// withdrawn, the token endpoint answers 503 temporarily_unavailable and
// /readyz fails, until keys with another signing key are loaded.
func TestKeyWithdrawal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	oldKid := e.keys.SigningKeyID()
	oldTok := e.token(t, e.url, id, secret, "")
	wantJSON(t, introspect(t, e.url, id, secret, oldTok), activeBody(t, oldTok)) // cached now

	newKey, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := e.keys.Rotated(newKey, 1) // new signing key, old one kept
	if err != nil {
		t.Fatal(err)
	}
	newKid := rotated.SigningKeyID()
	withdrawn := map[string]bool{oldKid: true}
	if err := e.authority.Use(rotated, withdrawn); err != nil {
		t.Fatal(err)
	}
	wantJSON(t, introspect(t, e.url, id, secret, oldTok), bodyInactive)
	if keys := jwksKeys(t, get(t, e.url+PathJWKS)); len(keys) != 1 || keys[newKid] == nil {
		t.Errorf("JWKS after the withdrawal: %v, want only %s", keys, newKid)
	}
	newTok := e.token(t, e.url, id, secret, "")
	if h, _ := tokenParts(t, newTok); h["kid"] != newKid {
		t.Errorf("new token kid %v, want %s", h["kid"], newKid)
	}
	wantJSON(t, introspect(t, e.url, id, secret, newTok), activeBody(t, newTok))
	wantStatus(t, get(t, e.url+"/readyz"), http.StatusOK)

	// The signing key withdrawn too, and no other in the set.
	withdrawn[newKid] = true
	if err := e.authority.Use(rotated, withdrawn); err != nil {
		t.Fatal(err)
	}
	r := post(t, e.url+PathToken, formType, grant(), basic(id, secret))
	wantStatus(t, r, http.StatusServiceUnavailable)
	wantHeaders(t, r, oauthHeaders(map[string]string{"Retry-After": "5"}))
	wantJSON(t, r, `{"error":"temporarily_unavailable","error_description":"The service cannot sign tokens right now; retry after the number of seconds in Retry-After"}`)
	ready := get(t, e.url+"/readyz")
	wantStatus(t, ready, http.StatusServiceUnavailable)
	wantJSON(t, ready, `{"detail":"signing key withdrawn"}`)
	wantJSON(t, introspect(t, e.url, id, secret, newTok), bodyInactive)
	if keys := jwksKeys(t, get(t, e.url+PathJWKS)); len(keys) != 0 {
		t.Errorf("JWKS with every key withdrawn: %v", keys)
	}
}
