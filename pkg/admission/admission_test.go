package admission_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

const (
	issuer   = "https://issuer.admission.test"
	audience = "partner-api"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// keys is a key authority whose set can fail and whose kids can be
// withdrawn.
type keys struct {
	set       jwk.Set
	err       error
	withdrawn map[string]bool
}

func (k *keys) KeySet() (jwk.Set, error)  { return k.set, k.err }
func (k *keys) Withdrawn(kid string) bool { return k.withdrawn[kid] }

// fixture is a registry on the test Redis, a key set, and a token of a
// partner client and of an operator client.
type fixture struct {
	store             *clients.Store
	rdb               redis.UniversalClient
	prefix            string
	keys              *keys
	ks                *accesstoken.KeySet
	clock             *testclock.Clock
	partner, operator clients.Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	f := &fixture{store: clients.NewStore(rdb, prefix, nil), rdb: rdb, prefix: prefix, clock: testclock.New(epoch)}
	key, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	if f.ks, err = accesstoken.NewKeySet(key); err != nil {
		t.Fatal(err)
	}
	f.keys = &keys{set: f.ks.Public(), withdrawn: map[string]bool{}}
	ctx := context.Background()
	if _, err := f.store.CreateOrg(ctx, clients.OrgSpec{Slug: "acme", Name: "Acme", Environment: clients.EnvironmentLive}); err != nil {
		t.Fatal(err)
	}
	f.partner = f.newPartner(t)
	if f.operator, _, err = f.store.CreateOperator(ctx, clients.OperatorSpec{Name: "operator"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// newPartner creates one more partner client.
func (f *fixture) newPartner(t *testing.T) clients.Client {
	t.Helper()
	c, _, err := f.store.CreateClient(context.Background(), clients.ClientSpec{OrgSlug: "acme", Name: "partner", Audience: clients.AudiencePharma,
		Scopes: []string{clients.ScopeEventsSubscribe}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// token signs a token of c with ks at the fixture's clock.
func (f *fixture) token(t *testing.T, ks *accesstoken.KeySet, c clients.Client) string {
	t.Helper()
	iss, err := accesstoken.NewIssuer(ks, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := iss.Issue(accesstoken.Grant{ClientID: c.ID, Scope: c.Scopes[0], Generation: c.Generation, Now: f.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// admission returns an admission of kind over the fixture's keys and
// registry (nil: the fixture's store); every request is counted at the
// same instant, so a limit of n admits n requests.
func (f *fixture) admission(t *testing.T, kind admission.Clients, registry admission.Registry, refuseQuery bool) *admission.Admission {
	t.Helper()
	if registry == nil {
		registry = f.store
	}
	v := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(f.keys, issuer, audience, f.clock.Now), 0, nil)
	a, err := admission.New(admission.Config{Clients: kind, RefuseQueryToken: refuseQuery, RateNow: func() time.Time { return epoch }, PublicBaseURL: publicBase}, v, registry)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func request(query string, authorization ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/me/?"+query, nil)
	if authorization != nil {
		r.Header["Authorization"] = authorization
	}
	return r
}

// deadRegistry is a clients.Store on a Redis that does not answer.
func deadRegistry(t *testing.T) *clients.Store {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	return clients.NewStore(rdb, "dead:", nil)
}

// TestAdmit: every Result, on the partner and the operator admission,
// with the claims and the admission set from the step that reads them on,
// and a cause for every refusal.
func TestAdmit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	other, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	otherKeys, _ := accesstoken.NewKeySet(other)
	partnerTok, operatorTok := f.token(t, f.ks, f.partner), f.token(t, f.ks, f.operator)

	type tc struct {
		name    string
		kind    admission.Clients
		req     func(t *testing.T) *http.Request
		want    admission.Result
		claims  bool // Outcome.Claims set
		prepare func(t *testing.T) (admission.Registry, func())
	}
	bearer := func(tok string) func(*testing.T) *http.Request {
		return func(*testing.T) *http.Request { return request("", "Bearer "+tok) }
	}
	cases := []tc{
		{name: "no header", req: func(*testing.T) *http.Request { return request("") }, want: admission.MissingToken},
		{name: "another scheme", req: func(*testing.T) *http.Request { return request("", "Basic dXNlcjpwYXNz") }, want: admission.MissingToken},
		{name: "two headers", req: func(*testing.T) *http.Request { return request("", "Bearer "+partnerTok, "Bearer "+partnerTok) }, want: admission.MalformedRequest},
		{name: "token in the query", req: func(*testing.T) *http.Request { return request("access_token=x", "Bearer "+partnerTok) }, want: admission.MalformedRequest},
		{name: "bad query", req: func(*testing.T) *http.Request { return request("%zz&access_token", "Bearer "+partnerTok) }, want: admission.MalformedRequest},
		{name: "empty bearer", req: func(*testing.T) *http.Request { return request("", "Bearer ") }, want: admission.MalformedToken},
		{name: "not a b64token", req: func(*testing.T) *http.Request { return request("", "Bearer svc_at_é") }, want: admission.MalformedToken},
		{name: "not a token", req: bearer("svc_at_a.b.c"), want: admission.Invalid},
		{name: "foreign key", req: bearer(f.token(t, otherKeys, f.partner)), want: admission.Invalid},
		{name: "partner admitted", req: bearer(partnerTok), want: admission.Admitted, claims: true},
		{name: "operator on the partner API", req: bearer(operatorTok), want: admission.WrongAudience, claims: true},
		{name: "operator admitted", kind: admission.Operators, req: bearer(operatorTok), want: admission.Admitted, claims: true},
		{name: "partner on the admin API", kind: admission.Operators, req: bearer(partnerTok), want: admission.WrongAudience, claims: true},
		{name: "query token allowed on the admin API", kind: admission.Operators,
			req: func(*testing.T) *http.Request { return request("access_token=x", "Bearer "+operatorTok) }, want: admission.Admitted, claims: true},
		{name: "registry down", req: bearer(partnerTok), want: admission.Unavailable, claims: true,
			prepare: func(t *testing.T) (admission.Registry, func()) { return deadRegistry(t), nil }},
		{name: "key set unreadable", req: bearer(partnerTok), want: admission.Unavailable,
			prepare: func(t *testing.T) (admission.Registry, func()) {
				f.keys.err = errors.New("jwks: not loaded")
				return nil, func() { f.keys.err = nil }
			}},
		{name: "withdrawn key", req: bearer(partnerTok), want: admission.Invalid,
			prepare: func(t *testing.T) (admission.Registry, func()) {
				kid := f.ks.SigningKeyID()
				f.keys.withdrawn[kid] = true
				return nil, func() { delete(f.keys.withdrawn, kid) }
			}},
		{name: "expired", req: bearer(partnerTok), want: admission.Expired,
			prepare: func(t *testing.T) (admission.Registry, func()) {
				f.clock.Add(accesstoken.Lifetime)
				return nil, func() { f.clock.Set(epoch) }
			}},
		{name: "rate limited", req: func(t *testing.T) *http.Request {
			// A client of its own whose limit's one request is spent.
			c := f.newPartner(t)
			if _, err := f.store.SetRateLimit(ctx, c.ID, 1); err != nil {
				t.Fatal(err)
			}
			tok := f.token(t, f.ks, c)
			if out := f.admission(t, admission.Partners, nil, true).Admit(ctx, request("", "Bearer "+tok)); out.Result != admission.Admitted {
				t.Fatalf("first request: %v", out.Result)
			}
			return request("", "Bearer "+tok)
		}, want: admission.RateLimited, claims: true},
		{name: "revoked", req: func(t *testing.T) *http.Request {
			c := f.newPartner(t)
			tok := f.token(t, f.ks, c)
			if _, err := f.store.Revoke(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
			return request("", "Bearer "+tok)
		}, want: admission.Revoked, claims: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var registry admission.Registry
			if c.prepare != nil {
				reg, undo := c.prepare(t)
				registry = reg
				if undo != nil {
					defer undo()
				}
			}
			out := f.admission(t, c.kind, registry, c.kind == admission.Partners).Admit(ctx, c.req(t))
			if out.Result != c.want {
				t.Fatalf("Result %v (cause %v), want %v", out.Result, out.Err, c.want)
			}
			if (out.Claims != nil) != c.claims {
				t.Errorf("Claims %v, want set: %v", out.Claims, c.claims)
			}
			if (out.Err == nil) != (c.want == admission.Admitted) {
				t.Errorf("Err %v for %v", out.Err, c.want)
			}
			switch c.want {
			case admission.Admitted:
				if out.Admission.Outcome != clients.Admitted || out.Admission.Description.RateLimitPerMinute == 0 {
					t.Errorf("admission %+v", out.Admission)
				}
			case admission.RateLimited:
				if out.Admission.Outcome != clients.Limited || out.Admission.Decision.RetryAfterSeconds() <= 0 {
					t.Errorf("admission %+v", out.Admission)
				}
			}
		})
	}
}

// TestNew: a verifier and a registry are required.
func TestNew(t *testing.T) {
	if _, err := admission.New(admission.Config{}, nil, nil); err == nil {
		t.Error("New without a verifier or registry succeeded")
	}
}

// TestResultString names every Result.
func TestResultString(t *testing.T) {
	for r := admission.Admitted; r <= admission.UseNonce; r++ {
		if s := r.String(); s == "" || s[0] == 'R' {
			t.Errorf("%d: %q", int(r), s)
		}
	}
	if s := admission.Result(99).String(); s != "Result(99)" {
		t.Errorf("Result(99) = %q", s)
	}
}
