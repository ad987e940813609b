package tokenserver

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
)

// TestAssertionReplayWithinSkew (issue 27 point 4): an assertion is
// accepted until exp plus AssertionLeeway, so its jti is remembered at
// least that long: one whose exp passed 10 s ago is accepted once out of
// 20 tries spread over two replicas on one Redis, its jti marked until exp
// plus the leeway (the code before it marked a jti for 1 ms: with tries
// 5 ms apart it accepted 20 of 20; the mark's TTL fails it however the
// tries are spaced), and
// one whose jti could not be remembered (a replica's clock of the limits
// already past exp plus the leeway) is refused.
func TestAssertionReplayWithinSkew(t *testing.T) {
	e := newEnv(t)
	second, _ := e.start(e.keys)
	k := assertiontest.NewKey(t, "one", jwa.ES256())
	id := e.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, k)})
	now := e.now.Now()
	c := assertiontest.Claims(id, testIssuer, now)
	c["iat"], c["exp"] = now.Add(-70*time.Second).Unix(), now.Add(-10*time.Second).Unix()
	a := k.Sign(t, c)
	accepted := 0
	sent := time.Now() // the mark's TTL runs down from here at the earliest
	for i := range 20 {
		base := e.url
		if i%2 == 1 {
			base = second
		}
		r := post(t, base+PathToken, formType, assertionForm(a))
		if r.Status == http.StatusOK {
			accepted++
			continue
		}
		wantStatus(t, r, http.StatusUnauthorized)
		wantJSON(t, r, bodyInvalidClient)
	}
	if accepted != 1 {
		t.Fatalf("accepted %d times of 20, want once", accepted)
	}
	// The mark lives until exp + leeway (+ a second's margin): 21 s here.
	marks, err := e.rdb.Keys(context.Background(), e.prefix+"{"+id+"}:jti:*").Result()
	if err != nil || len(marks) != 1 {
		t.Fatalf("jti marks %v %v", marks, err)
	}
	// Less what has passed since it was set: no bound on how long the
	// tries took.
	if ttl, least := e.rdb.PTTL(context.Background(), marks[0]).Val(), 20*time.Second-time.Since(sent); ttl < least || ttl > 21*time.Second {
		t.Fatalf("jti mark TTL %v, want %v-21 s (exp + %v from now)", ttl, least.Round(time.Millisecond), AssertionLeeway)
	}
	// Past exp + leeway the assertion is expired.
	e.now.Add(AssertionLeeway)
	r := post(t, second+PathToken, formType, assertionForm(a))
	wantStatus(t, r, http.StatusUnauthorized)

	// An assertion whose jti could not be remembered is refused: verified
	// (the token clock says within the leeway), but the clock the mark is
	// set by is past exp + leeway.
	fresh := newEnv(t)
	id = fresh.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, k)})
	c = assertiontest.Claims(id, testIssuer, fresh.now.Now())
	c["exp"] = fresh.now.Now().Add(-10 * time.Second).Unix()
	fresh.rate.Add(25 * time.Second)
	r = post(t, fresh.url+PathToken, formType, assertionForm(k.Sign(t, c)))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
}

// signWithoutKid signs claims with k as Authlib's PrivateKeyJWT does with a
// PEM key: a header of alg and typ only.
func signWithoutKid(t *testing.T, k assertiontest.Key, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	h := jws.NewHeaders()
	_ = h.Set(jws.TypeKey, "JWT")
	b, err := jws.Sign(payload, jws.WithKey(k.Alg, k.Signer, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAssertionWithoutKid (issue 27 point 9): an assertion without a kid
// is verified by the one key of the client that fits its alg, and refused
// when none or several do.
func TestAssertionWithoutKid(t *testing.T) {
	e := newEnv(t)
	es, rs, ed := assertiontest.NewKey(t, "es", jwa.ES256()), assertiontest.NewKey(t, "rs", jwa.RS256()), assertiontest.NewKey(t, "ed", jwa.EdDSA())
	es2 := assertiontest.NewKey(t, "es2", jwa.ES256())
	id := e.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, es, rs)})
	two := e.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, es, es2)})
	now := e.now.Now()
	for _, k := range []assertiontest.Key{es, rs, {KID: "rs", Alg: jwa.PS256(), Signer: rs.Signer}} {
		tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(signWithoutKid(t, k, assertiontest.Claims(id, testIssuer, now)))), clients.ScopePatientsRead)
	}
	for name, a := range map[string]string{
		"no key fits alg":       signWithoutKid(t, ed, assertiontest.Claims(id, testIssuer, now)),
		"another key, same alg": signWithoutKid(t, es2, assertiontest.Claims(id, testIssuer, now)),
		"two keys fit alg":      signWithoutKid(t, es, assertiontest.Claims(two, testIssuer, now)),
	} {
		r := post(t, e.url+PathToken, formType, assertionForm(a))
		wantStatus(t, r, http.StatusUnauthorized)
		wantJSON(t, r, bodyInvalidClient)
		if t.Failed() {
			t.Fatal(name)
		}
	}
	// With a kid, a client of two keys of one alg works as before.
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(es2.Sign(t, assertiontest.Claims(two, testIssuer, now)))), clients.ScopePatientsRead)
}

// TestAssertionLifetime (issue 27 point 9): by default an assertion may
// live an hour, what Authlib signs (exp = iat + 3600); the operator may
// set less (or more, up to a day), and every assertion stays single use.
func TestAssertionLifetime(t *testing.T) {
	k := assertiontest.NewKey(t, "one", jwa.ES256())
	for _, c := range []struct {
		lifetime time.Duration
		exp      time.Duration // ahead of now
		ok       bool
	}{
		{0, time.Hour, true}, // Authlib's default
		{0, time.Hour + AssertionLeeway, true},
		{0, time.Hour + AssertionLeeway + time.Second, false},
		{5 * time.Minute, 5 * time.Minute, true},
		{5 * time.Minute, 10 * time.Minute, false},
		{2 * time.Hour, 2 * time.Hour, true},
	} {
		e := newEnv(t, withMaxAssertionLifetime(c.lifetime))
		id := e.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, k)})
		claims := assertiontest.Claims(id, testIssuer, e.now.Now())
		claims["exp"] = e.now.Now().Add(c.exp).Unix()
		a := k.Sign(t, claims)
		r := post(t, e.url+PathToken, formType, assertionForm(a))
		if !c.ok {
			wantStatus(t, r, http.StatusUnauthorized)
			wantJSON(t, r, bodyInvalidClient)
			continue
		}
		tokenReply(t, r, clients.ScopePatientsRead)
		r = post(t, e.url+PathToken, formType, assertionForm(a))
		wantStatus(t, r, http.StatusUnauthorized)
		// Remembered until exp + leeway.
		marks, _ := e.rdb.Keys(context.Background(), e.prefix+"{"+id+"}:jti:*").Result()
		if len(marks) != 1 {
			t.Fatalf("marks %v", marks)
		}
		if ttl := e.rdb.PTTL(context.Background(), marks[0]).Val(); ttl < c.exp+AssertionLeeway-time.Second || ttl > c.exp+AssertionLeeway+time.Second {
			t.Errorf("lifetime %v, exp in %v: jti mark TTL %v", c.lifetime, c.exp, ttl)
		}
	}
	for _, bad := range []time.Duration{-time.Second, MaxAssertionLifetimeLimit + time.Second} {
		if _, err := NewServer(nil, Config{Issuer: testIssuer, Audience: testAudience, MaxAssertionLifetime: bad}, Deps{}); err == nil {
			t.Errorf("MaxAssertionLifetime %v accepted", bad)
		}
	}
}
