package adminapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/authserver/adminapi/adminapitest"
	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// stack is the token service and the admin API of one test, on loopback
// httptest servers, over the real Redis.
type stack struct {
	t      *testing.T
	store  *clients.Store
	tokens *httptest.Server
	admin  *httptest.Server
	doc    *adminapitest.Validator
	prefix string
	rdb    redis.UniversalClient
}

type options struct {
	confirm redisconn.Confirmation
}

func newStack(t *testing.T, opt options) *stack {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	key, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := accesstoken.NewKeySet(key)
	if err != nil {
		t.Fatal(err)
	}
	store := clients.NewStore(rdb, prefix, nil)
	tok, err := tokenserver.NewServer(slog.New(slog.DiscardHandler), tokenserver.Config{Issuer: "https://issuer.test", Audience: "partner-api"},
		tokenserver.Deps{Registry: store, Keys: keys, Ready: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	adminStore := clients.NewStore(rdb, prefix, nil)
	adminStore.ConfirmWrites(opt.confirm)
	withdrawals := keywithdrawal.NewStore(rdb, prefix)
	withdrawals.ConfirmWrites(opt.confirm)
	adm, err := adminapi.NewServer(slog.New(slog.DiscardHandler), adminapi.Config{KeyPrefix: prefix},
		adminapi.Deps{Ops: &operations.Service{Registry: adminStore, Withdrawals: withdrawals}, Tokens: tok, Admit: store, Keys: tok, Redis: rdb})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := adminapitest.Load(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s := &stack{t: t, store: store, tokens: httptest.NewServer(tok), admin: httptest.NewServer(adm), doc: doc, prefix: prefix, rdb: rdb}
	t.Cleanup(s.tokens.Close)
	t.Cleanup(s.admin.Close)
	return s
}

// operator creates an operator client and returns an HTTP client that
// calls with its tokens, got by x/oauth2's client credentials flow.
func (s *stack) operator(readOnly bool, scopes ...string) (clients.Client, string, *http.Client) {
	s.t.Helper()
	c, secret, err := s.store.CreateOperator(s.t.Context(), clients.OperatorSpec{Name: "test operator", ReadOnly: readOnly})
	if err != nil {
		s.t.Fatal(err)
	}
	return c, secret, s.clientFor(c.ID, secret, scopes...)
}

func (s *stack) clientFor(id, secret string, scopes ...string) *http.Client {
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: s.tokens.URL + "/api/v1/oauth/token/", Scopes: scopes}
	return cc.Client(s.t.Context())
}

// answer is one answer of the admin API.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(a.Body, &v); err != nil {
		t.Fatalf("body %q: %v", a.Body, err)
	}
	return v
}

// call sends a request with hc and checks the answer against the OpenAPI
// document (every answer of these tests is checked).
func (s *stack) call(hc *http.Client, method, path string, body any, header ...string) answer {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			raw, _ := json.Marshal(b)
			rd = bytes.NewReader(raw)
		}
	}
	req, err := http.NewRequestWithContext(s.t.Context(), method, s.admin.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	if err := s.doc.Validate(s.t.Context(), req, a.Status, a.Header, a.Body); err != nil {
		s.t.Errorf("answer does not match the OpenAPI document: %v\nbody: %s", err, raw)
	}
	return a
}

// token asks the token endpoint for a partner's token with Basic.
func (s *stack) tokenStatus(id, secret string) int {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.tokens.URL+"/api/v1/oauth/token/", strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func clientsOrg(slug string) clients.OrgSpec {
	return clients.OrgSpec{Slug: slug, Name: "Org " + slug, Environment: clients.EnvironmentLive}
}

// partner creates a hospital client in org.
func (s *stack) partner(org string) (string, string) {
	s.t.Helper()
	c, secret, err := s.store.CreateClient(s.t.Context(), clients.ClientSpec{OrgSlug: org, Name: "partner", Audience: clients.AudienceHospital, Scopes: []string{clients.ScopePatientsRead}})
	if err != nil {
		s.t.Fatal(err)
	}
	return c.ID, secret
}
