package adminapi_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
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
	"github.com/partnerapi/authplatform/pkg/jwksuri"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
)

// testIssuer is the token service's issuer identifier: the audience of
// client assertions (RFC 7523 section 3, rule 3).
const testIssuer = "https://issuer.test"

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
	// jwksAllowHTTP is the admin API's Config.JWKSAllowHTTP.
	jwksAllowHTTP bool
	// jwksAllowPrivate is the operations' JWKS.AllowPrivate.
	jwksAllowPrivate bool
	// logs, when not nil, receives the admin API's log (JSON records).
	logs *logtest.Sink
	// redis, when not nil, is the Redis of the admin API's registry,
	// withdrawals, idempotency records and audit stream; the token service
	// and the admission of operators keep the test Redis (so a test can
	// stop this one and still be admitted).
	redis redis.UniversalClient
	// mtls serves the token service and the admin API over TLS, asking
	// for client certificates (mtls_test.go).
	mtls bool
}

// partnerHosts resolves the jwks_uri hosts of the tests: partner.example
// and p.example to a public address, internal.example to a private one.
type partnerHosts struct{}

func (partnerHosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	switch host {
	case "partner.example", "p.example":
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
	case "internal.example":
		return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.0.0.9")}, nil
	}
	return nil, errors.New("no such host")
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
	// One signing-key authority and one verifier over it, shared by both
	// servers, as the command wires them.
	authority, err := signingkeys.New(keys, testIssuer, "partner-api")
	if err != nil {
		t.Fatal(err)
	}
	verifier := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(authority, testIssuer, "partner-api", nil), 0, nil)
	tok, err := tokenserver.NewServer(slog.New(slog.DiscardHandler), tokenserver.Config{Issuer: testIssuer, Audience: "partner-api"},
		tokenserver.Deps{Registry: store, Keys: authority, Tokens: verifier, Ready: func(context.Context) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	adminRedis := rdb
	if opt.redis != nil {
		adminRedis = opt.redis
	}
	adminStore := clients.NewStore(adminRedis, prefix, nil)
	adminStore.ConfirmWrites(opt.confirm)
	withdrawals := keywithdrawal.NewStore(adminRedis, prefix)
	withdrawals.ConfirmWrites(opt.confirm)
	logger := slog.New(slog.DiscardHandler)
	if opt.logs != nil {
		// As the command logs: JSON records with the request id.
		if logger, err = logging.New(opt.logs, "debug"); err != nil {
			t.Fatal(err)
		}
	}
	// The admin API's public base URL is its listener's (a DPoP proof's
	// htu names it): the listener is open before the handler is built.
	adminSrv := httptest.NewUnstartedServer(nil)
	scheme := "http://"
	if opt.mtls {
		scheme = "https://"
	}
	adm, err := adminapi.NewServer(logger, adminapi.Config{KeyPrefix: prefix, JWKSAllowHTTP: opt.jwksAllowHTTP, PublicBaseURL: scheme + adminSrv.Listener.Addr().String()},
		adminapi.Deps{Ops: &operations.Service{Registry: adminStore, Withdrawals: withdrawals,
			JWKS: jwksuri.Policy{AllowHTTP: opt.jwksAllowHTTP, AllowPrivate: opt.jwksAllowPrivate, Resolver: partnerHosts{}}}, Tokens: verifier, Admit: store, Keys: authority, Redis: adminRedis})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := adminapitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	adminSrv.Config.Handler = adm
	tokSrv := httptest.NewUnstartedServer(tok)
	if opt.mtls {
		for _, srv := range []*httptest.Server{adminSrv, tokSrv} {
			srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
			srv.StartTLS()
		}
	} else {
		adminSrv.Start()
		tokSrv.Start()
	}
	s := &stack{t: t, store: store, tokens: tokSrv, admin: adminSrv, doc: doc, prefix: prefix, rdb: rdb}
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
	status, _ := s.token(id, secret)
	return status
}

// token asks the token endpoint for a partner's token with Basic and
// returns the status and the access token (empty unless 200).
func (s *stack) token(id, secret string) (int, string) {
	s.t.Helper()
	return s.tokenForm(url.Values{"grant_type": {"client_credentials"}}, id, secret)
}

// tokenForm posts form to the token endpoint, with Basic when id is set.
func (s *stack) tokenForm(form url.Values, id, secret string) (int, string) {
	s.t.Helper()
	status, body := s.postForm(tokenserver.PathToken, form, id, secret)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if status == http.StatusOK {
		if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
			s.t.Fatalf("token answer %s: %v", body, err)
		}
	}
	return status, tok.AccessToken
}

// active introspects token as client id (RFC 7662: a client learns only
// about its own tokens).
func (s *stack) active(id, secret, token string) bool {
	s.t.Helper()
	status, body := s.postForm(tokenserver.PathIntrospect, url.Values{"token": {token}}, id, secret)
	var v struct {
		Active bool `json:"active"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &v) != nil {
		s.t.Fatalf("introspection: %d %s", status, body)
	}
	return v.Active
}

func (s *stack) postForm(path string, form url.Values, id, secret string) (int, []byte) {
	s.t.Helper()
	req, _ := http.NewRequestWithContext(s.t.Context(), http.MethodPost, s.tokens.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if id != "" {
		req.SetBasicAuth(id, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
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
