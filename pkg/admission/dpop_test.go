package admission_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/admission"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/dpop/dpoptest"
	"github.com/partnerapi/authplatform/pkg/dpopnonce"
)

// publicBase is the partner API's public base URL in these tests, and
// meURI the URI a proof for GET /api/v1/me/ names.
const (
	publicBase = "https://api.partner.test"
	meURI      = publicBase + "/api/v1/me/"
)

// boundToken signs a token of c bound to key (cnf.jkt, RFC 9449 section
// 6.1) at the fixture's clock.
func (f *fixture) boundToken(t *testing.T, c clients.Client, key *dpoptest.Key) string {
	t.Helper()
	iss, err := accesstoken.NewIssuer(f.ks, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := iss.Issue(accesstoken.Grant{ClientID: c.ID, Scope: c.Scopes[0], Generation: c.Generation, JKT: key.JKT(), Now: f.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dpopAdmission is the partner admission with DPoP settings: the public
// base URL, nonces (nil: off), over its own store on the fixture's Redis
// and prefix (another replica).
func (f *fixture) dpopAdmission(t *testing.T, base string, nonces admission.Nonces) *admission.Admission {
	t.Helper()
	v := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(f.keys, issuer, audience, f.clock.Now), 0, nil)
	a, err := admission.New(admission.Config{Clients: admission.Partners, RefuseQueryToken: true, RateNow: func() time.Time { return epoch },
		PublicBaseURL: base, Nonces: nonces, Now: f.clock.Now}, v, f.replica())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// replica is one more store on the fixture's Redis and prefix, as another
// server process has.
func (f *fixture) replica() *clients.Store {
	return clients.NewStore(f.rdb, f.prefix, nil)
}

// dpopRequest is GET /api/v1/me/ with Authorization: scheme token and the
// given DPoP header values.
func dpopRequest(scheme, token string, proofs ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/api/v1/me/?format=json", nil)
	r.Header.Set("Authorization", scheme+" "+token)
	if proofs != nil {
		r.Header["Dpop"] = proofs
	}
	return r
}

// TestAdmitDPoP: a DPoP-bound token is admitted with a proof of its key
// made for the request, and refused (with the DPoP flag, so the answer
// carries a DPoP challenge) as Bearer, without a proof, with another key's
// proof (a stolen token: its owner keeps working), with a proof made for
// another method, URI or token, an old one, or one replayed on another
// replica. A bearer token sent as DPoP is refused too.
func TestAdmitDPoP(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	owner, thief := dpoptest.NewKey(), dpoptest.NewKey()
	tok := f.boundToken(t, f.partner, owner)
	bearerTok := f.token(t, f.ks, f.partner)
	now := f.clock.Now()
	proof := func(k *dpoptest.Key, p dpoptest.Proof) string {
		if p.Method == "" {
			p.Method = http.MethodGet
		}
		if p.URI == "" {
			p.URI = meURI
		}
		if p.AccessToken == "" {
			p.AccessToken = tok
		}
		if p.IssuedAt.IsZero() {
			p.IssuedAt = now
		}
		return k.Sign(p)
	}
	good := func() string { return proof(owner, dpoptest.Proof{}) }
	cases := []struct {
		name string
		req  *http.Request
		want admission.Result
		err  error // errors.Is the cause, when set
	}{
		{"bound token with its proof", dpopRequest("DPoP", tok, good()), admission.Admitted, nil},
		{"scheme in another case", dpopRequest("dpop", tok, good()), admission.Admitted, nil},
		{"bound token as Bearer", dpopRequest("Bearer", tok, good()), admission.Invalid, accesstoken.ErrInvalidToken},
		{"bound token as Bearer without proof", dpopRequest("Bearer", tok), admission.Invalid, accesstoken.ErrInvalidToken},
		{"bearer token as DPoP", dpopRequest("DPoP", bearerTok, proof(owner, dpoptest.Proof{AccessToken: bearerTok})), admission.Invalid, accesstoken.ErrInvalidToken},
		{"no proof", dpopRequest("DPoP", tok), admission.InvalidProof, dpop.ErrInvalidProof},
		{"two proofs", dpopRequest("DPoP", tok, good(), good()), admission.InvalidProof, dpop.ErrInvalidProof},
		{"stolen token, thief's proof", dpopRequest("DPoP", tok, proof(thief, dpoptest.Proof{})), admission.InvalidProof, dpop.ErrInvalidProof},
		{"owner still works", dpopRequest("DPoP", tok, good()), admission.Admitted, nil},
		{"wrong htm", dpopRequest("DPoP", tok, proof(owner, dpoptest.Proof{Method: http.MethodPost})), admission.InvalidProof, dpop.ErrInvalidProof},
		{"wrong htu host", dpopRequest("DPoP", tok, proof(owner, dpoptest.Proof{URI: "https://evil.test/api/v1/me/"})), admission.InvalidProof, dpop.ErrInvalidProof},
		{"wrong htu path", dpopRequest("DPoP", tok, proof(owner, dpoptest.Proof{URI: publicBase + "/api/v1/other/"})), admission.InvalidProof, dpop.ErrInvalidProof},
		{"htu with the listener's address", dpopRequest("DPoP", tok, proof(owner, dpoptest.Proof{URI: "http://example.com/api/v1/me/"})), admission.InvalidProof, dpop.ErrInvalidProof},
		{"ath of another token", dpopRequest("DPoP", tok, proof(owner, dpoptest.Proof{AccessToken: bearerTok})), admission.InvalidProof, dpop.ErrInvalidProof},
		{"iat too old", dpopRequest("DPoP", tok, proof(owner, dpoptest.Proof{IssuedAt: now.Add(-dpop.DefaultWindow - time.Second)})), admission.InvalidProof, dpop.ErrInvalidProof},
		{"empty DPoP token", dpopRequest("DPoP", "", good()), admission.MalformedToken, nil},
		{"garbage DPoP token", dpopRequest("DPoP", "svc_at_a.b.c", good()), admission.Invalid, nil},
	}
	a := f.dpopAdmission(t, publicBase, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := a.Admit(ctx, c.req)
			if out.Result != c.want {
				t.Fatalf("Result %v (cause %v), want %v", out.Result, out.Err, c.want)
			}
			if !out.DPoP {
				t.Error("DPoP flag not set: the answer would carry a Bearer challenge")
			}
			if out.Nonce != "" {
				t.Errorf("Nonce %q with nonces off", out.Nonce)
			}
			if c.err != nil && !errors.Is(out.Err, c.err) {
				t.Errorf("cause %v, want %v", out.Err, c.err)
			}
			if c.want == admission.Admitted && (out.Err != nil || out.Claims == nil || out.Claims.BoundKey() != owner.JKT() || out.Admission.Outcome != clients.Admitted) {
				t.Errorf("admitted outcome %+v", out)
			}
		})
	}

	// A bearer request on the same admission: no DPoP flag (a Bearer
	// challenge, as before), and no replay mark written.
	if out := a.Admit(ctx, dpopRequest("Bearer", bearerTok)); out.Result != admission.Admitted || out.DPoP {
		t.Fatalf("bearer token: %v (DPoP %v, cause %v)", out.Result, out.DPoP, out.Err)
	}
}

// TestAdmitDPoPReplay: a proof is accepted once across replicas (RFC 9449
// section 11.1): two partner API replicas on one Redis, the same proof
// sent to each; the second is refused as replayed, and a fresh proof of
// the same key is admitted.
func TestAdmitDPoPReplay(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	key := dpoptest.NewKey()
	tok := f.boundToken(t, f.partner, key)
	one, two := f.dpopAdmission(t, publicBase, nil), f.dpopAdmission(t, publicBase, nil)
	p := key.Sign(dpoptest.Proof{Method: http.MethodGet, URI: meURI, AccessToken: tok, IssuedAt: f.clock.Now()})
	if out := one.Admit(ctx, dpopRequest("DPoP", tok, p)); out.Result != admission.Admitted {
		t.Fatalf("first use on replica one: %v (%v)", out.Result, out.Err)
	}
	out := two.Admit(ctx, dpopRequest("DPoP", tok, p))
	if out.Result != admission.InvalidProof || !errors.Is(out.Err, dpop.ErrReplayed) || !out.DPoP || out.Claims == nil {
		t.Fatalf("replay on replica two: %v (%v), want InvalidProof, replayed", out.Result, out.Err)
	}
	if out := one.Admit(ctx, dpopRequest("DPoP", tok, p)); out.Result != admission.InvalidProof {
		t.Fatalf("replay on replica one: %v", out.Result)
	}
	fresh := key.Sign(dpoptest.Proof{Method: http.MethodGet, URI: meURI, AccessToken: tok, IssuedAt: f.clock.Now()})
	if out := two.Admit(ctx, dpopRequest("DPoP", tok, fresh)); out.Result != admission.Admitted || out.Admission.Decision.Count != 2 {
		t.Fatalf("fresh proof: %v (%v), count %d; want admitted, count 2 (the replays not counted)", out.Result, out.Err, out.Admission.Decision.Count)
	}
	keys, err := f.rdb.Keys(ctx, f.prefix+"{"+f.partner.ID+"}:dpop:*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("replay marks %v, %v; want 2", keys, err)
	}
	for _, k := range keys {
		if ttl, err := f.rdb.PTTL(ctx, k).Result(); err != nil || ttl <= dpop.DefaultWindow || ttl > dpop.ReplayTTL(0, 0) {
			t.Errorf("mark %s PTTL %v, %v; want within (%v, %v]", k, ttl, err, dpop.DefaultWindow, dpop.ReplayTTL(0, 0))
		}
	}
}

// TestAdmitDPoPNonces: with nonces on (shared through Redis), a proof
// without a nonce gets UseNonce and a fresh nonce; one replica's nonce is
// accepted by another; every DPoP outcome carries the nonce, bearer ones
// none. With nonces off a proof's nonce is ignored.
func TestAdmitDPoPNonces(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	key := dpoptest.NewKey()
	tok := f.boundToken(t, f.partner, key)
	sign := func(nonce string) string {
		return key.Sign(dpoptest.Proof{Method: http.MethodGet, URI: meURI, AccessToken: tok, IssuedAt: f.clock.Now(), Nonce: nonce})
	}
	na, err := dpopnonce.SharedNonces(ctx, f.rdb, f.prefix)
	if err != nil {
		t.Fatal(err)
	}
	nb, err := dpopnonce.SharedNonces(ctx, f.rdb, f.prefix)
	if err != nil {
		t.Fatal(err)
	}
	one, two := f.dpopAdmission(t, publicBase, na), f.dpopAdmission(t, publicBase, nb)

	out := one.Admit(ctx, dpopRequest("DPoP", tok, sign("")))
	if out.Result != admission.UseNonce || !errors.Is(out.Err, dpop.ErrUseNonce) || out.Nonce == "" || !out.DPoP {
		t.Fatalf("no nonce: %v (%v), nonce %q; want UseNonce with a nonce", out.Result, out.Err, out.Nonce)
	}
	if out := two.Admit(ctx, dpopRequest("DPoP", tok, sign("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"))); out.Result != admission.UseNonce {
		t.Fatalf("forged nonce: %v", out.Result)
	}
	got := two.Admit(ctx, dpopRequest("DPoP", tok, sign(out.Nonce)))
	if got.Result != admission.Admitted || got.Nonce != out.Nonce {
		t.Fatalf("replica one's nonce on replica two: %v (%v), nonce %q; want admitted with %q", got.Result, got.Err, got.Nonce, out.Nonce)
	}
	if out := one.Admit(ctx, dpopRequest("DPoP", tok, key.Sign(dpoptest.Proof{Method: http.MethodPost, URI: meURI, AccessToken: tok, IssuedAt: f.clock.Now(), Nonce: got.Nonce}))); out.Result != admission.InvalidProof || out.Nonce == "" {
		t.Fatalf("wrong htm with nonces on: %v, nonce %q", out.Result, out.Nonce)
	}
	if out := one.Admit(ctx, dpopRequest("Bearer", f.token(t, f.ks, f.partner))); out.Result != admission.Admitted || out.Nonce != "" || out.DPoP {
		t.Fatalf("bearer with nonces on: %v, nonce %q", out.Result, out.Nonce)
	}
	off := f.dpopAdmission(t, publicBase, nil)
	if out := off.Admit(ctx, dpopRequest("DPoP", tok, sign("whatever"))); out.Result != admission.Admitted || out.Nonce != "" {
		t.Fatalf("nonces off, proof with a nonce: %v (%v), nonce %q", out.Result, out.Err, out.Nonce)
	}
}

// TestAdmitDPoPConfiguredURI: the htu is checked against the configured
// public base URL only (issue 59 point 8): a proof made for the URL a Host
// or X-Forwarded-Host header names, even from a trusted proxy, is refused;
// New refuses an API without a public base URL, or with one that is not an
// absolute http(s) URL.
func TestAdmitDPoPConfiguredURI(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	key := dpoptest.NewKey()
	tok := f.boundToken(t, f.partner, key)
	a := f.dpopAdmission(t, publicBase, nil)
	proof := func(uri string) string {
		return key.Sign(dpoptest.Proof{Method: http.MethodGet, URI: uri, AccessToken: tok, IssuedAt: f.clock.Now()})
	}
	evil := dpopRequest("DPoP", tok, proof("http://evil.example/api/v1/me/"))
	evil.Host = "evil.example"
	if out := a.Admit(ctx, evil); out.Result != admission.InvalidProof {
		t.Errorf("htu of the Host header: %v, want InvalidProof", out.Result)
	}
	forwarded := dpopRequest("DPoP", tok, proof("https://evil.example/api/v1/me/"))
	forwarded.Header.Set("X-Forwarded-Proto", "https")
	forwarded.Header.Set("X-Forwarded-Host", "evil.example")
	if out := a.Admit(ctx, forwarded); out.Result != admission.InvalidProof {
		t.Errorf("htu of X-Forwarded-Host: %v, want InvalidProof", out.Result)
	}
	if out := a.Admit(ctx, dpopRequest("DPoP", tok, proof(meURI))); out.Result != admission.Admitted {
		t.Errorf("htu of the public base URL: %v (%v)", out.Result, out.Err)
	}
	v := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(f.keys, issuer, audience, f.clock.Now), 0, nil)
	if _, err := admission.New(admission.Config{}, v, f.store); !errors.Is(err, admission.ErrNoPublicBaseURL) {
		t.Errorf("New without a public base URL: %v, want ErrNoPublicBaseURL", err)
	}
	if _, err := admission.New(admission.Config{PublicBaseURL: "ftp://x"}, v, f.store); err == nil {
		t.Error("New accepted an ftp public base URL")
	}
}
