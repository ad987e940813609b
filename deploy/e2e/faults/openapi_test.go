package faults

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/resourceserver/apidocs/apidocstest"
)

// TestResponsesMatchOpenAPI sends real requests to both servers and checks
// every answer (status, headers, body) against the published OpenAPI
// document with kin-openapi, so the document and the servers cannot drift.
func TestResponsesMatchOpenAPI(t *testing.T) {
	s := newStack(t)
	docs, err := apidocstest.Load()
	if err != nil {
		t.Fatal(err)
	}
	id, secret := s.client("hospital", "patients.read", "programme.metrics.read")
	otherID, otherSecret := s.client("pharma")
	token := s.token(id, "patients.read", 1)
	spare := s.token(id, "patients.read", 1) // revoked below
	foreign := s.token(otherID, "", 1)       // another client's

	form := func(v url.Values) string { return v.Encode() }
	post := func(path, body string, basicID, basicSecret string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if basicID != "" {
			r.SetBasicAuth(basicID, basicSecret)
		}
		return r
	}
	get := func(path, bearer string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if bearer != "" {
			r.Header.Set("Authorization", "Bearer "+bearer)
		}
		return r
	}
	cases := []struct {
		name   string
		req    func() *http.Request
		status int
	}{
		{"token 200", func() *http.Request {
			return post("/api/v1/oauth/token/", form(url.Values{"grant_type": {"client_credentials"}}), id, secret)
		}, 200},
		{"token 200 json body", func() *http.Request {
			r := post("/api/v1/oauth/token/", `{"grant_type":"client_credentials","scope":"patients.read"}`, id, secret)
			r.Header.Set("Content-Type", "application/json")
			return r
		}, 200},
		{"token 200 no scopes", func() *http.Request {
			return post("/api/v1/oauth/token/", form(url.Values{"grant_type": {"client_credentials"}, "client_id": {otherID}, "client_secret": {otherSecret}}), "", "")
		}, 200},
		{"token 400 invalid_request", func() *http.Request {
			return post("/api/v1/oauth/token/", "", id, secret)
		}, 400},
		{"token 400 unsupported_grant_type", func() *http.Request {
			return post("/api/v1/oauth/token/", form(url.Values{"grant_type": {"password"}}), id, secret)
		}, 400},
		{"token 400 invalid_scope", func() *http.Request {
			return post("/api/v1/oauth/token/", form(url.Values{"grant_type": {"client_credentials"}, "scope": {"referrals.write"}}), id, secret)
		}, 400},
		{"token 401 invalid_client", func() *http.Request {
			return post("/api/v1/oauth/token/", form(url.Values{"grant_type": {"client_credentials"}}), id, "svc_cs_wrong")
		}, 401},
		{"introspect 200 active", func() *http.Request {
			return post("/api/v1/oauth/introspect/", form(url.Values{"token": {token}}), id, secret)
		}, 200},
		{"introspect 200 inactive", func() *http.Request {
			return post("/api/v1/oauth/introspect/", form(url.Values{"token": {"svc_at_garbage"}}), id, secret)
		}, 200},
		{"introspect 400", func() *http.Request { return post("/api/v1/oauth/introspect/", "", id, secret) }, 400},
		{"introspect 401", func() *http.Request {
			return post("/api/v1/oauth/introspect/", form(url.Values{"token": {token}}), id, "nope")
		}, 401},
		{"revoke 200", func() *http.Request {
			return post("/api/v1/oauth/revoke/", form(url.Values{"token": {spare}, "token_type_hint": {"access_token"}}), id, secret)
		}, 200},
		{"revoke 200 json body", func() *http.Request {
			r := post("/api/v1/oauth/revoke/", `{"token":"svc_at_garbage"}`, id, secret)
			r.Header.Set("Content-Type", "application/json")
			return r
		}, 200},
		{"revoke 400 invalid_request", func() *http.Request { return post("/api/v1/oauth/revoke/", "", id, secret) }, 400},
		{"revoke 400 unauthorized_client", func() *http.Request {
			return post("/api/v1/oauth/revoke/", form(url.Values{"token": {foreign}}), id, secret)
		}, 400},
		{"revoke 401", func() *http.Request {
			return post("/api/v1/oauth/revoke/", form(url.Values{"token": {token}}), id, "nope")
		}, 401},
		{"jwks", func() *http.Request { return get("/.well-known/jwks.json", "") }, 200},
		{"metadata", func() *http.Request { return get("/.well-known/oauth-authorization-server", "") }, 200},
		{"me 200", func() *http.Request { return get("/api/v1/me/", token) }, 200},
		{"me 401 no token", func() *http.Request { return get("/api/v1/me/", "") }, 401},
		{"me 401 bad token", func() *http.Request { return get("/api/v1/me/", "svc_at_x.y.z") }, 401},
		{"schema", func() *http.Request { return get("/api/v1/schema/?format=json", "") }, 200},
		{"schema 400", func() *http.Request { return get("/api/v1/schema/?format=yaml", "") }, 400},
		{"llms.txt", func() *http.Request { return get("/llms.txt", "") }, 200},
		{"llms-full.txt", func() *http.Request { return get("/llms-full.txt", "") }, 200},
		{"docs page", func() *http.Request { return get("/docs/quickstart.md", "") }, 200},
		{"healthz", func() *http.Request { return get("/healthz", "") }, 200},
		{"readyz", func() *http.Request { return get("/readyz", "") }, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := s.direct(tc.req())
			if got.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", got.Status, tc.status, got.Body)
			}
			if err := docs.Validate(context.Background(), tc.req(), got.Status, got.Header, got.Body); err != nil {
				t.Errorf("answer does not match the OpenAPI document: %v\nheaders %v\nbody %s", err, got.Header, got.Body)
			}
		})
	}
}
