package faults

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/adminapi"
	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
	"github.com/partnerapi/authplatform/pkg/testclock"
	"github.com/partnerapi/authplatform/resourceserver/api"
	"github.com/partnerapi/authplatform/resourceserver/apidocs"
)

// failingKeys is a signing-key authority whose key set can be made
// unreadable (the resource server's JWKS not fetched yet).
type failingKeys struct {
	*signingkeys.Authority
	down atomic.Bool
}

func (k *failingKeys) KeySet() (jwk.Set, error) {
	if k.down.Load() {
		return nil, errors.New("key set unreadable")
	}
	return k.Authority.KeySet()
}

// surfaces are the admin API and the partner API of one test, in-process,
// over one signing-key authority, each with the admission the servers
// build (package admission).
type surfaces struct {
	keys       *failingKeys
	admin, api http.Handler
}

// newSurfaces wires both APIs over keys, admitting with registry.
func newSurfaces(t *testing.T, rdb redis.UniversalClient, prefix string, registry *clients.Store, keys *failingKeys, now func() time.Time) surfaces {
	t.Helper()
	return newSurfacesWith(t, rdb, prefix, registry, keys, now, nil)
}

// newSurfacesWith wires both APIs as newSurfaces does, requiring DPoP
// server nonces from nonces when not nil.
func newSurfacesWith(t *testing.T, rdb redis.UniversalClient, prefix string, registry *clients.Store, keys *failingKeys, now func() time.Time, nonces admission.Nonces) surfaces {
	t.Helper()
	rateNow := func() time.Time { return now().Truncate(time.Minute) }
	verifier := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(keys, issuer, audience, now), 0, nil)
	admin, err := adminapi.NewServer(slog.New(slog.DiscardHandler), adminapi.Config{KeyPrefix: prefix, RateNow: rateNow, PublicBaseURL: "http://example.com"},
		adminapi.Deps{Ops: &operations.Service{Registry: registry, Withdrawals: keywithdrawal.NewStore(rdb, prefix)}, Tokens: verifier, Admit: registry, Keys: keys.Authority, Redis: rdb, Nonces: nonces})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := apidocs.New("")
	if err != nil {
		t.Fatal(err)
	}
	res, err := api.NewServer(slog.New(slog.DiscardHandler), api.Config{Issuer: issuer, Audience: audience, Now: now, RateNow: rateNow, PublicBaseURL: "http://example.com"},
		api.Deps{Registry: registry, Keys: keys, Docs: docs, Ready: func(context.Context) error { return nil }, Nonces: nonces})
	if err != nil {
		t.Fatal(err)
	}
	return surfaces{keys: keys, admin: admin, api: res}
}

// surfaceAnswer is what a test compares of an answer across the APIs.
type surfaceAnswer struct {
	status int
	// challenge is the WWW-Authenticate value less the realm ("" none).
	challenge string
	// retryAfter is the Retry-After value ("" none).
	retryAfter string
	// refused reports a refusal in the surface's own error format.
	refused bool
}

// answerOf reads an answer; realm is the surface's challenge realm.
func answerOf(t *testing.T, rec *httptest.ResponseRecorder, realm string) surfaceAnswer {
	t.Helper()
	a := surfaceAnswer{status: rec.Code, retryAfter: rec.Header().Get("Retry-After")}
	if ch := rec.Header().Get("WWW-Authenticate"); ch != "" {
		rest, ok := strings.CutPrefix(ch, `Bearer realm="`+realm+`"`)
		if !ok {
			t.Fatalf("challenge %q is not of realm %q", ch, realm)
		}
		a.challenge = "Bearer" + rest
	}
	if rec.Code < 300 {
		return a
	}
	// The admin API answers RFC 9457 problems, the partner API {"detail"}.
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	switch realm {
	case "admin":
		a.refused = rec.Header().Get("Content-Type") == "application/problem+json" && body["status"] == float64(rec.Code) && body["code"] != nil
	default:
		a.refused = len(body) == 1 && body["detail"] != nil
	}
	return a
}

// TestAdmissionAcrossSurfaces: each admission outcome gets the same
// status, challenge error code and Retry-After on the admin API and on the
// partner API, each in its own body format, except where the APIs differ
// on purpose (noted in the table): a client of the other kind is 403
// insufficient_scope on the admin API (a valid token without the operator
// standing) and 401 invalid_token on the partner API (operator tokens are
// not for it, deploy/docs/operator-guide.md: Admin API); a 429's Retry-After is the limiter's
// wait on the admin API and the 60 of the partner guides
// (resourceserver/apidocs/guides/rate-limits.md, Limits) on the partner API.
func TestAdmissionAcrossSurfaces(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	store := clients.NewStore(rdb, prefix, nil)
	ctx := context.Background()
	if _, err := store.CreateOrg(ctx, clients.OrgSpec{Slug: "acme", Name: "Acme", Environment: clients.EnvironmentLive}); err != nil {
		t.Fatal(err)
	}
	key, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := accesstoken.NewKeySet(key)
	if err != nil {
		t.Fatal(err)
	}
	authority, err := signingkeys.New(ks, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Now())
	live := newSurfaces(t, rdb, prefix, store, &failingKeys{Authority: authority}, clock.Now)
	deadRedis := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { deadRedis.Close() })
	dead := newSurfaces(t, rdb, prefix, clients.NewStore(deadRedis, prefix, nil), &failingKeys{Authority: authority}, clock.Now)

	// cur is the test the helpers below fail: the subtest under way (they
	// run one at a time).
	cur := t
	// Clients: a partner and an operator, each kind's token for its own
	// surface and for the other one.
	partner := func() clients.Client {
		c, _, err := store.CreateClient(ctx, clients.ClientSpec{OrgSlug: "acme", Name: "partner", Audience: clients.AudiencePharma,
			Scopes: []string{clients.ScopeEventsSubscribe}})
		if err != nil {
			cur.Fatal(err)
		}
		return c
	}
	operator := func() clients.Client {
		c, _, err := store.CreateOperator(ctx, clients.OperatorSpec{Name: "operator"})
		if err != nil {
			cur.Fatal(err)
		}
		return c
	}
	token := func(is *accesstoken.Issuer, c clients.Client) string {
		tok, _, err := is.Issue(accesstoken.Grant{ClientID: c.ID, Scope: strings.Join(c.Scopes, " "), Generation: c.Generation, Now: clock.Now()})
		if err != nil {
			cur.Fatal(err)
		}
		return tok
	}
	otherKey, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	otherKeys, _ := accesstoken.NewKeySet(otherKey)
	foreign, _ := accesstoken.NewIssuer(otherKeys, issuer, audience)

	// surface is one API: where its admitted route is and which kind of
	// client it serves.
	type surface struct {
		realm, path string
		handler     func(s surfaces) http.Handler
		own, other  func() clients.Client
	}
	adminSurface := surface{realm: "admin", path: "/admin/v1/keys", handler: func(s surfaces) http.Handler { return s.admin }, own: operator, other: partner}
	apiSurface := surface{realm: "api", path: "/api/v1/me/", handler: func(s surfaces) http.Handler { return s.api }, own: partner, other: operator}

	bearer := func(tok string) []string { return []string{"Bearer " + tok} }
	for _, tc := range []struct {
		name string
		// authorization builds the request's Authorization values for a
		// surface; prepare (optional) runs before, undo after.
		authorization func(sf surface) []string
		stack         func() surfaces
		prepare, undo func()
		want          surfaceAnswer
		// admin is the admin API's answer where it differs on purpose.
		admin *surfaceAnswer
	}{
		{name: "admitted", authorization: func(sf surface) []string { return bearer(token(authority.Issuer(), sf.own())) },
			want: surfaceAnswer{status: 200}},
		{name: "missing token", authorization: func(surface) []string { return nil },
			want: surfaceAnswer{status: 401, challenge: "Bearer", refused: true}},
		{name: "another scheme", authorization: func(surface) []string { return []string{"Basic dXNlcjpwYXNz"} },
			want: surfaceAnswer{status: 401, challenge: "Bearer", refused: true}},
		{name: "malformed request", authorization: func(sf surface) []string {
			tok := token(authority.Issuer(), sf.own())
			return []string{"Bearer " + tok, "Bearer " + tok}
		}, want: surfaceAnswer{status: 400, challenge: `Bearer, error="invalid_request"`, refused: true}},
		{name: "malformed token", authorization: func(surface) []string { return []string{"Bearer svc_at_é"} },
			want: surfaceAnswer{status: 401, challenge: `Bearer, error="invalid_token"`, refused: true}},
		{name: "invalid", authorization: func(sf surface) []string { return bearer(token(foreign, sf.own())) },
			want: surfaceAnswer{status: 401, challenge: `Bearer, error="invalid_token"`, refused: true}},
		{name: "expired", authorization: func(sf surface) []string {
			tok := token(authority.Issuer(), sf.own())
			clock.Add(accesstoken.Lifetime)
			return bearer(tok)
		}, undo: func() { clock.Add(-accesstoken.Lifetime) },
			want: surfaceAnswer{status: 401, challenge: `Bearer, error="invalid_token"`, refused: true}},
		{name: "revoked", authorization: func(sf surface) []string {
			c := sf.own()
			tok := token(authority.Issuer(), c)
			if _, err := store.Revoke(ctx, c.ID); err != nil {
				cur.Fatal(err)
			}
			return bearer(tok)
		}, want: surfaceAnswer{status: 401, challenge: `Bearer, error="invalid_token"`, refused: true}},
		{name: "wrong audience kind", authorization: func(sf surface) []string { return bearer(token(authority.Issuer(), sf.other())) },
			want:  surfaceAnswer{status: 401, challenge: `Bearer, error="invalid_token"`, refused: true},
			admin: &surfaceAnswer{status: 403, challenge: `Bearer, error="insufficient_scope", scope="admin.read"`, refused: true}},
		{name: "rate limited", authorization: func(sf surface) []string {
			c := sf.own()
			if _, err := store.SetRateLimit(ctx, c.ID, 1); err != nil {
				cur.Fatal(err)
			}
			tok := token(authority.Issuer(), c)
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, sf.path, nil)
			r.Header["Authorization"] = bearer(tok)
			sf.handler(live).ServeHTTP(rec, r)
			if rec.Code != 200 {
				cur.Fatalf("the limit's one request: %d %s", rec.Code, rec.Body)
			}
			return bearer(tok)
		}, want: surfaceAnswer{status: 429, retryAfter: "*", refused: true}},
		{name: "registry unavailable", stack: func() surfaces { return dead },
			authorization: func(sf surface) []string { return bearer(token(authority.Issuer(), sf.own())) },
			want:          surfaceAnswer{status: 503, retryAfter: "5", refused: true}},
		{name: "key set unavailable", authorization: func(sf surface) []string { return bearer(token(authority.Issuer(), sf.own())) },
			prepare: func() { live.keys.down.Store(true) }, undo: func() { live.keys.down.Store(false) },
			want: surfaceAnswer{status: 503, retryAfter: "5", refused: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur = t
			defer func() { cur = nil }()
			for _, sf := range []surface{adminSurface, apiSurface} {
				stack := live
				if tc.stack != nil {
					stack = tc.stack()
				}
				authorization := tc.authorization(sf)
				if tc.prepare != nil {
					tc.prepare()
				}
				r := httptest.NewRequest(http.MethodGet, sf.path, nil)
				if authorization != nil {
					r.Header["Authorization"] = authorization
				}
				rec := httptest.NewRecorder()
				sf.handler(stack).ServeHTTP(rec, r)
				if tc.undo != nil {
					tc.undo()
				}
				got := answerOf(t, rec, sf.realm)
				want := tc.want
				if sf.realm == "admin" && tc.admin != nil {
					want = *tc.admin
				}
				if want.retryAfter == "*" {
					if n, err := strconv.Atoi(got.retryAfter); err != nil || n <= 0 {
						t.Errorf("%s: Retry-After %q, want a number of seconds", sf.realm, got.retryAfter)
					}
					want.retryAfter = got.retryAfter
				}
				if got != want {
					t.Errorf("%s: got %+v, want %+v; body %s", sf.realm, got, want, rec.Body)
				}
			}
		})
	}
}
