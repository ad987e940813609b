package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop/dpoptest"
	"github.com/partnerapi/authplatform/pkg/dpopnonce"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

// dpopAnswer is what TestDPoPAcrossSurfaces compares of an answer.
type dpopAnswer struct {
	status int
	// challenge is the whole WWW-Authenticate value ("" none).
	challenge string
	// code is the admin API problem's code, or the partner API's detail
	// (set by the test from want: compared, not read, for admitted calls).
	code string
	// nonce: the answer carries a DPoP-Nonce.
	nonce bool
	// retryAfter: the answer carries a Retry-After.
	retryAfter bool
}

// algs is the algs of every DPoP challenge (RFC 9449 section 7.1).
const algs = `algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`

// dpopChallenge is a DPoP challenge's expected value.
func dpopChallenge(code, description string) string {
	v := `DPoP error="` + code + `"`
	if description != "" {
		v += `, error_description="` + description + `"`
	}
	return v + ", " + algs
}

// TestDPoPAcrossSurfaces: a DPoP-bound token (cnf.jkt) on the admin API
// and on the partner API, each through its own handler, with proofs made
// for the request (htu: the URL the request was sent to, no proxy): each
// outcome gets the same status and DPoP challenge on both, the admin API's
// problem code being the partner API's challenge error. A stolen bound
// token is refused from another key while its owner keeps working; a
// proof is accepted once, across replicas; with nonces on, a proof
// without one gets use_dpop_nonce and a DPoP-Nonce, and one with it is
// admitted on another replica.
func TestDPoPAcrossSurfaces(t *testing.T) {
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
	// Two replicas of each API on one Redis, and two with nonces on.
	one := newSurfaces(t, rdb, prefix, store, &failingKeys{Authority: authority}, clock.Now)
	two := newSurfaces(t, rdb, prefix, clients.NewStore(rdb, prefix, nil), &failingKeys{Authority: authority}, clock.Now)
	noncesOne, noncesTwo := sharedNonces(t, rdb, prefix), sharedNonces(t, rdb, prefix)
	withNoncesOne := newSurfacesWith(t, rdb, prefix, store, &failingKeys{Authority: authority}, clock.Now, noncesOne)
	withNoncesTwo := newSurfacesWith(t, rdb, prefix, store, &failingKeys{Authority: authority}, clock.Now, noncesTwo)

	cur := t
	newClient := func(operator bool) clients.Client {
		var c clients.Client
		var err error
		if operator {
			c, _, err = store.CreateOperator(ctx, clients.OperatorSpec{Name: "operator"})
		} else {
			c, _, err = store.CreateClient(ctx, clients.ClientSpec{OrgSlug: "acme", Name: "partner", Audience: clients.AudiencePharma,
				Scopes: []string{clients.ScopeEventsSubscribe}})
		}
		if err != nil {
			cur.Fatal(err)
		}
		return c
	}
	issue := func(c clients.Client, jkt string) string {
		tok, _, err := authority.Issuer().Issue(accesstoken.Grant{ClientID: c.ID, Scope: strings.Join(c.Scopes, " "), Generation: c.Generation, JKT: jkt, Now: clock.Now()})
		if err != nil {
			cur.Fatal(err)
		}
		return tok
	}

	type surface struct {
		admin   bool
		path    string
		handler func(s surfaces) http.Handler
	}
	surfacesUnderTest := []surface{
		{admin: true, path: "/admin/v1/keys", handler: func(s surfaces) http.Handler { return s.admin }},
		{path: "/api/v1/me/", handler: func(s surfaces) http.Handler { return s.api }},
	}
	// call sends GET path to h with Authorization: scheme tok and the
	// proofs, and reads the answer.
	call := func(h http.Handler, path, scheme, tok string, proofs ...string) (dpopAnswer, *httptest.ResponseRecorder) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", scheme+" "+tok)
		if proofs != nil {
			r.Header["Dpop"] = proofs
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		a := dpopAnswer{status: rec.Code, challenge: rec.Header().Get("WWW-Authenticate"), nonce: rec.Header().Get("DPoP-Nonce") != "",
			retryAfter: rec.Header().Get("Retry-After") != ""}
		if rec.Code >= 300 {
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				cur.Fatalf("body %q: %v", rec.Body, err)
			}
			if code, ok := body["code"].(string); ok && rec.Header().Get("Content-Type") == "application/problem+json" {
				a.code = code
			} else if detail, ok := body["detail"].(string); ok && len(body) == 1 {
				a.code = detail
			}
		}
		return a, rec
	}
	// proof is a proof of k for GET path on the test's host, for tok.
	proof := func(k *dpoptest.Key, method, path, tok, nonce string) string {
		return k.Sign(dpoptest.Proof{Method: method, URI: "http://example.com" + path, AccessToken: tok, IssuedAt: clock.Now(), Nonce: nonce})
	}

	invalidToken := dpopChallenge("invalid_token", "")
	badProof := func(desc string) dpopAnswer {
		return dpopAnswer{status: 401, challenge: dpopChallenge("invalid_dpop_proof", desc), code: "invalid_dpop_proof"}
	}
	for _, tc := range []struct {
		name string
		// run makes the calls of the case on sf and returns the last
		// answer.
		run  func(sf surface, own clients.Client) dpopAnswer
		want dpopAnswer
		// api is the partner API's answer where it differs: its body's
		// detail is not the admin API's code.
		api *dpopAnswer
	}{
		{name: "bound token with its proof", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, ""))
			return a
		}, want: dpopAnswer{status: 200}},
		{name: "bound token as Bearer", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			a, _ := call(sf.handler(one), sf.path, "Bearer", tok, proof(k, "GET", sf.path, tok, ""))
			return a
		}, want: dpopAnswer{status: 401, challenge: invalidToken, code: "invalid_token"},
			api: &dpopAnswer{status: 401, challenge: invalidToken, code: "invalid, expired or revoked access token"}},
		{name: "bearer token as DPoP", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, "")
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, ""))
			return a
		}, want: dpopAnswer{status: 401, challenge: invalidToken, code: "invalid_token"},
			api: &dpopAnswer{status: 401, challenge: invalidToken, code: "invalid, expired or revoked access token"}},
		{name: "stolen token from another key, its owner keeps working", run: func(sf surface, own clients.Client) dpopAnswer {
			owner, thief := dpoptest.NewKey(), dpoptest.NewKey()
			tok := issue(own, owner.JKT())
			stolen, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(thief, "GET", sf.path, tok, ""))
			if a, rec := call(sf.handler(two), sf.path, "DPoP", tok, proof(owner, "GET", sf.path, tok, "")); a.status != 200 {
				cur.Errorf("the owner after the theft: %d %s", a.status, rec.Body)
			}
			return stolen
		}, want: badProof("the DPoP proof's key is not the key the access token is bound to")},
		{name: "proof for another method", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "POST", sf.path, tok, ""))
			return a
		}, want: badProof("the DPoP proof's htm does not match the request's method")},
		{name: "proof for another URI", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path+"x", tok, ""))
			return a
		}, want: badProof("the DPoP proof's htu does not match the request's URI")},
		{name: "proof for another token", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path, issue(own, k.JKT()), ""))
			return a
		}, want: badProof("the DPoP proof's ath does not match the access token")},
		{name: "no proof", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			a, _ := call(sf.handler(one), sf.path, "DPoP", issue(own, k.JKT()))
			return a
		}, want: badProof("a DPoP header is required")},
		{name: "proof replayed on another replica", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			p := proof(k, "GET", sf.path, tok, "")
			if a, rec := call(sf.handler(one), sf.path, "DPoP", tok, p); a.status != 200 {
				cur.Fatalf("first use: %d %s", a.status, rec.Body)
			}
			a, _ := call(sf.handler(two), sf.path, "DPoP", tok, p)
			return a
		}, want: badProof("the DPoP proof was used before")},
		{name: "expired bound token", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			clock.Add(accesstoken.Lifetime)
			defer clock.Add(-accesstoken.Lifetime)
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, ""))
			return a
		}, want: dpopAnswer{status: 401, challenge: invalidToken, code: "invalid_token"},
			api: &dpopAnswer{status: 401, challenge: invalidToken, code: "invalid, expired or revoked access token"}},
		{name: "revoked", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			if _, err := store.Revoke(ctx, own.ID); err != nil {
				cur.Fatal(err)
			}
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, ""))
			return a
		}, want: dpopAnswer{status: 401, challenge: invalidToken, code: "invalid_token"},
			api: &dpopAnswer{status: 401, challenge: invalidToken, code: "invalid, expired or revoked access token"}},
		{name: "wrong audience kind", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(newClient(!sf.admin), k.JKT())
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, ""))
			return a
		}, want: dpopAnswer{status: 403, challenge: dpopChallenge("insufficient_scope", "") + `, scope="admin.read"`, code: "insufficient_scope"},
			api: &dpopAnswer{status: 401, challenge: invalidToken, code: "invalid, expired or revoked access token"}},
		{name: "rate limited", run: func(sf surface, own clients.Client) dpopAnswer {
			if _, err := store.SetRateLimit(ctx, own.ID, 1); err != nil {
				cur.Fatal(err)
			}
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			if a, rec := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, "")); a.status != 200 {
				cur.Fatalf("the limit's one request: %d %s", a.status, rec.Body)
			}
			a, _ := call(sf.handler(one), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, ""))
			return a
		}, want: dpopAnswer{status: 429, retryAfter: true, code: "rate_limited"},
			api: &dpopAnswer{status: 429, retryAfter: true, code: "rate limit exceeded; retry after the time in Retry-After"}},
		{name: "nonces on: a proof without one, then with the nonce on another replica", run: func(sf surface, own clients.Client) dpopAnswer {
			k := dpoptest.NewKey()
			tok := issue(own, k.JKT())
			a, rec := call(sf.handler(withNoncesOne), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, ""))
			want := dpopAnswer{status: 401, challenge: dpopChallenge("use_dpop_nonce", "a DPoP nonce is required"), nonce: true, code: "use_dpop_nonce"}
			if !sf.admin {
				want.code = "a DPoP nonce is required"
			}
			if a != want {
				cur.Errorf("without a nonce: %+v, want %+v", a, want)
			}
			nonce := rec.Header().Get("DPoP-Nonce")
			a, _ = call(sf.handler(withNoncesTwo), sf.path, "DPoP", tok, proof(k, "GET", sf.path, tok, nonce))
			return a
		}, want: dpopAnswer{status: 200, nonce: true}},
		{name: "nonces on: bearer answers unchanged", run: func(sf surface, own clients.Client) dpopAnswer {
			a, _ := call(sf.handler(withNoncesOne), sf.path, "Bearer", issue(own, ""))
			return a
		}, want: dpopAnswer{status: 200}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur = t
			defer func() { cur = t }()
			for _, sf := range surfacesUnderTest {
				got := tc.run(sf, newClient(sf.admin))
				want := tc.want
				if !sf.admin {
					if tc.api != nil {
						want = *tc.api
					} else if want.code == "invalid_dpop_proof" {
						// The partner API's detail is the proof's refusal text.
						want.code = strings.TrimSuffix(strings.TrimPrefix(want.challenge, `DPoP error="invalid_dpop_proof", error_description="`), `", `+algs)
					}
				}
				if got != want {
					t.Errorf("admin %v: got %+v, want %+v", sf.admin, got, want)
				}
			}
		})
	}
}

// sharedNonces is the nonce source of one replica, its secret shared
// through rdb (pkg/dpopnonce).
func sharedNonces(t *testing.T, rdb redis.UniversalClient, prefix string) *dpopnonce.Shared {
	t.Helper()
	s, err := dpopnonce.SharedNonces(context.Background(), rdb, prefix)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
