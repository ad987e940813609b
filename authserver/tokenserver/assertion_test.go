package tokenserver

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
)

// keyedClient creates a private_key_jwt client of org "acme".
func (e *env) keyedClient(src clients.ClientKeySource) string {
	e.t.Helper()
	c, secret, err := e.store.CreateClient(context.Background(), clients.ClientSpec{
		OrgSlug: "acme", Name: "keyed", Audience: clients.AudienceHospital, Scopes: []string{clients.ScopePatientsRead}, Keys: &src,
	})
	if err != nil || secret != "" {
		e.t.Fatalf("create: %v (secret %q)", err, secret)
	}
	return c.ID
}

func assertionForm(assertion string, kv ...string) string {
	return form(append([]string{"grant_type", "client_credentials", "client_assertion_type", AssertionType, "client_assertion", assertion}, kv...)...)
}

// TestPrivateKeyJWT: a client registered with public keys gets tokens with
// assertions signed by any of them, with every algorithm allowed; every
// wrong, replayed or forged assertion gets the same invalid_client as a
// wrong secret (RFC 7521 section 4.2.1).
func TestPrivateKeyJWT(t *testing.T) {
	e := newEnv(t)
	var keys []assertiontest.Key
	for _, alg := range []jwa.SignatureAlgorithm{jwa.ES256(), jwa.ES384(), jwa.RS256(), jwa.RS384(), jwa.PS256(), jwa.EdDSA(), jwa.EdDSAEd25519()} {
		keys = append(keys, assertiontest.NewKey(t, "k-"+alg.String(), alg))
	}
	id := e.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, keys...)})
	now := e.now.Now()
	for _, k := range keys {
		a := k.Sign(t, assertiontest.Claims(id, testIssuer, now))
		tok := tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(a)), clients.ScopePatientsRead)
		_, claims := tokenParts(t, tok)
		if claims["sub"] != id || claims["secret_id"] != nil {
			t.Fatalf("%s: claims %v", k.Alg, claims)
		}
		// Single use: the same assertion again is refused (RFC 7523 section 3, jti).
		r := post(t, e.url+PathToken, formType, assertionForm(a))
		wantStatus(t, r, http.StatusUnauthorized)
		wantJSON(t, r, bodyInvalidClient)
		// The token works at introspection, which the client authenticates to
		// with a fresh assertion.
		r = post(t, e.url+PathIntrospect, formType, form("client_assertion_type", AssertionType,
			"client_assertion", k.Sign(t, assertiontest.Claims(id, testIssuer, now)), "token", tok))
		if wantStatus(t, r, http.StatusOK); decode(t, r.Body)["active"] != true {
			t.Fatalf("%s: introspection %s", k.Alg, r.Body)
		}
	}
	// The token endpoint's URL is an audience too (alone in an array here:
	// TestAssertionTypAndAudience), and client_id may be sent.
	c := assertiontest.Claims(id, testIssuer, now)
	c["aud"] = []string{testIssuer + PathToken}
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(keys[0].Sign(t, c), "client_id", id)), clients.ScopePatientsRead)

	other := assertiontest.NewKey(t, keys[0].KID, jwa.ES256()) // same kid, another key
	refused := map[string]string{}
	mod := func(name string, f func(map[string]any)) {
		c := assertiontest.Claims(id, testIssuer, now)
		f(c)
		refused[name] = keys[0].Sign(t, c)
	}
	mod("wrong aud", func(c map[string]any) { c["aud"] = "https://elsewhere.test" })
	mod("no aud", func(c map[string]any) { delete(c, "aud") })
	mod("iss not the client", func(c map[string]any) { c["iss"] = "svc_aaaaaaaaaaaaaaaaaaaaaaaa" })
	mod("no exp", func(c map[string]any) { delete(c, "exp") })
	mod("expired", func(c map[string]any) { c["exp"] = now.Add(-time.Minute).Unix() })
	mod("exp past the longest lifetime", func(c map[string]any) {
		c["exp"] = now.Add(DefaultMaxAssertionLifetime + AssertionLeeway + time.Second).Unix()
	})
	mod("nbf in the future", func(c map[string]any) { c["nbf"] = now.Add(5 * time.Minute).Unix() })
	mod("no jti", func(c map[string]any) { delete(c, "jti") })
	refused["signed by another key"] = other.Sign(t, assertiontest.Claims(id, testIssuer, now))
	refused["unknown kid"] = assertiontest.NewKey(t, "nobody", jwa.ES256()).Sign(t, assertiontest.Claims(id, testIssuer, now))
	good := keys[0].Sign(t, assertiontest.Claims(id, testIssuer, now))
	parts := strings.Split(good, ".")
	refused["alg none"] = b64(`{"alg":"none","kid":"k-ES256"}`) + "." + parts[1] + "."
	hs, _ := jws.Sign([]byte(parts[1]), jws.WithKey(jwa.HS256(), []byte("a shared secret of 32 bytes or more")))
	refused["HS256"] = string(hs)
	refused["ES256 key, RS256 header"] = b64(`{"alg":"RS256","kid":"k-ES256"}`) + "." + parts[1] + "." + parts[2]
	refused["tampered payload"] = parts[0] + "." + b64(`{"iss":"`+id+`","sub":"`+id+`","aud":"`+testIssuer+`","exp":9999999999,"jti":"x"}`) + "." + parts[2]
	for name, a := range refused {
		r := post(t, e.url+PathToken, formType, assertionForm(a))
		wantStatus(t, r, http.StatusUnauthorized)
		wantJSON(t, r, bodyInvalidClient)
		if t.Failed() {
			t.Fatalf("%s was not refused like a wrong secret", name)
		}
	}

	// Mixed or incomplete methods are malformed requests.
	for name, c := range map[string]struct {
		body string
		mods []func(*http.Request)
		desc string
	}{
		"and Basic":      {assertionForm(good), []func(*http.Request){basic(id, "svc_cs_x")}, "use one client authentication method: a client assertion or a secret, not both"},
		"and a secret":   {assertionForm(good, "client_secret", "x"), nil, "use one client authentication method: a client assertion or a secret, not both"},
		"no type":        {form("grant_type", "client_credentials", "client_assertion", good), nil, "client_assertion_type is required with client_assertion"},
		"another client": {assertionForm(good, "client_id", "svc_aaaaaaaaaaaaaaaaaaaaaaaa"), nil, "client_id does not name the client assertion's subject"},
		"no assertion":   {form("grant_type", "client_credentials", "client_assertion_type", AssertionType), nil, "client_assertion is required with client_assertion_type"},
	} {
		r := post(t, e.url+PathToken, formType, c.body, c.mods...)
		wantStatus(t, r, http.StatusBadRequest)
		wantJSON(t, r, bodyInvalidRequest(c.desc))
		if t.Failed() {
			t.Fatalf("%s", name)
		}
	}
	// A secret client presenting an assertion, a keyed client presenting a
	// secret: invalid_client.
	secretID, secret := e.client(clients.AudiencePharma)
	r := post(t, e.url+PathToken, formType, assertionForm(keys[0].Sign(t, assertiontest.Claims(secretID, testIssuer, now))))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
	r = post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
}

func b64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// TestAssertionFailuresLimited: wrong assertions spend the same
// per-address failure budget as wrong secrets, and are counted as checked
// under private_key_jwt. Past it, the forged ones are refused unchecked,
// but the client's own assertion, whose signature verifies, is not: a
// neighbour's forgeries must not lock the client out (issue 59, hole 10).
func TestAssertionFailuresLimited(t *testing.T) {
	e := newEnv(t, withFailures(3))
	k := assertiontest.NewKey(t, "k1", jwa.ES256())
	id := e.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, k)})
	stranger := assertiontest.NewKey(t, "k1", jwa.ES256())
	now := e.now.Now()
	for i := range 3 {
		r := post(t, e.url+PathToken, formType, assertionForm(stranger.Sign(t, assertiontest.Claims(id, testIssuer, now))))
		if r.Status != http.StatusUnauthorized {
			t.Fatalf("forged assertion %d: %d %s", i, r.Status, r.Body)
		}
	}
	r := post(t, e.url+PathToken, formType, assertionForm(stranger.Sign(t, assertiontest.Claims(id, testIssuer, now))))
	wantStatus(t, r, http.StatusTooManyRequests)
	if decode(t, r.Body)["error"] != "slow_down" {
		t.Fatalf("after 3 forged assertions: %s", r.Body)
	}
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k.Sign(t, assertiontest.Claims(id, testIssuer, now)))), clients.ScopePatientsRead)
	// The forged ones within the budget and the right one were checked,
	// the forged one past the budget was not.
	for method, want := range map[string]float64{clients.AuthPrivateKeyJWT: 4, clients.AuthClientSecret: 0} {
		if got := counter(t, e.metrics, "partnerapi_client_credentials_checked_total", map[string]string{"method": method}); got != want {
			t.Errorf("credentials checked{method=%q} = %v, want %v", method, got, want)
		}
	}
}

// TestRotateKeys: after rotate-keys, assertions of the old keys are
// refused and every token issued before is dead, at once, although the
// server had the old keys cached.
func TestRotateKeys(t *testing.T) {
	e := newEnv(t)
	old, fresh := assertiontest.NewKey(t, "2026", jwa.ES256()), assertiontest.NewKey(t, "2027", jwa.EdDSA())
	id := e.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, old)})
	now := e.now.Now()
	tok := mustToken(t, post(t, e.url+PathToken, formType, assertionForm(old.Sign(t, assertiontest.Claims(id, testIssuer, now)))))
	if _, err := e.store.RotateKeys(context.Background(), id, clients.ClientKeySource{JWKS: assertiontest.JWKS(t, fresh)}); err != nil {
		t.Fatal(err)
	}
	r := post(t, e.url+PathToken, formType, assertionForm(old.Sign(t, assertiontest.Claims(id, testIssuer, now))))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
	r = post(t, e.url+PathIntrospect, formType, form("client_assertion_type", AssertionType,
		"client_assertion", fresh.Sign(t, assertiontest.Claims(id, testIssuer, now)), "token", tok))
	wantStatus(t, r, http.StatusOK)
	wantJSON(t, r, bodyInactive)
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(fresh.Sign(t, assertiontest.Claims(id, testIssuer, now)))), clients.ScopePatientsRead)
}

// TestJWKSURI: keys fetched from the client's jwks_uri, fetched again when
// an assertion names a kid they lack (the partner rotated), and never from
// a private address unless the operator allows it.
func TestJWKSURI(t *testing.T) {
	k1, k2 := assertiontest.NewKey(t, "one", jwa.ES256()), assertiontest.NewKey(t, "two", jwa.RS256())
	served := assertiontest.JWKS(t, k1)
	fetches := 0
	keysSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches++
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(served)
	}))
	t.Cleanup(keysSrv.Close)

	e := newEnv(t, withJWKSPolicy(JWKSPolicy{AllowHTTP: true, AllowPrivate: true}))
	id := e.keyedClient(clients.ClientKeySource{URL: keysSrv.URL + "/jwks.json", AllowHTTP: true})
	now := e.now.Now()
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k1.Sign(t, assertiontest.Claims(id, testIssuer, now)))), clients.ScopePatientsRead)
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k1.Sign(t, assertiontest.Claims(id, testIssuer, now)))), clients.ScopePatientsRead)
	if fetches != 1 {
		t.Fatalf("%d fetches for two assertions, want 1 (cached)", fetches)
	}
	served = assertiontest.JWKS(t, k1, k2) // the partner publishes a new key
	// An unknown kid fetches the keys again, but not twice within
	// jwksRefetchEvery: the first try within it is refused.
	r := post(t, e.url+PathToken, formType, assertionForm(k2.Sign(t, assertiontest.Claims(id, testIssuer, now))))
	wantStatus(t, r, http.StatusUnauthorized)
	e.now.Add(jwksRefetchEvery)
	now = e.now.Now()
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k2.Sign(t, assertiontest.Claims(id, testIssuer, now)))), clients.ScopePatientsRead)
	if fetches != 2 {
		t.Fatalf("%d fetches after a new kid, want 2", fetches)
	}

	// The default policy: the same URL (loopback, http) is never fetched,
	// nor with http allowed; the refusal is logged with the client id and
	// the reason, counted, and answered as keys that could not be fetched,
	// not as a failed authentication.
	for policy, why := range map[JWKSPolicy]string{{}: "must be https", {AllowHTTP: true}: "address 127.0.0.1 is loopback"} {
		strict := newEnv(t, withJWKSPolicy(policy))
		id2 := strict.keyedClient(clients.ClientKeySource{URL: keysSrv.URL + "/jwks.json", AllowHTTP: true})
		before := fetches
		r = post(t, strict.url+PathToken, formType, assertionForm(k1.Sign(t, assertiontest.Claims(id2, testIssuer, now))))
		wantStatus(t, r, http.StatusServiceUnavailable)
		wantHeaders(t, r, oauthHeaders(map[string]string{"Retry-After": "2", "WWW-Authenticate": ""}))
		wantJSON(t, r, bodyKeysUnavailable)
		if fetches != before {
			t.Fatalf("%+v: a private address was fetched", policy)
		}
		if got := counter(t, strict.metrics, "partnerapi_jwks_uri_fetches_total", map[string]string{"result": "refused"}); got != 1 {
			t.Errorf("%+v: refused fetches %v, want 1", policy, got)
		}
		if logs := strict.logs.String(); !strings.Contains(logs, `"msg":"jwks_uri fetch refused"`) || !strings.Contains(logs, `"client_id":"`+id2+`"`) ||
			!strings.Contains(logs, why) {
			t.Errorf("%+v: the refused fetch was not logged with the client id and %q:\n%s", policy, why, logs)
		}
	}
}

// TestRevocation: RFC 7009 at /api/v1/oauth/revoke/.
func TestRevocation(t *testing.T) {
	e := newEnv(t)
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	otherID, otherSecret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	tok, keep := e.token(t, e.url, id, secret, ""), e.token(t, e.url, id, secret, "")

	revoke := func(id, secret string, kv ...string) reply {
		return post(t, e.url+PathRevoke, formType, form(kv...), basic(id, secret))
	}
	r := revoke(id, secret, "token", tok, "token_type_hint", "access_token")
	wantStatus(t, r, http.StatusOK)
	if len(r.Body) != 0 || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("revoke: %q %v", r.Body, r.Header)
	}
	wantJSON(t, introspect(t, e.url, id, secret, tok), bodyInactive)
	if decode(t, introspect(t, e.url, id, secret, keep).Body)["active"] != true {
		t.Fatal("revoking one token killed another")
	}
	// Again, unknown, malformed: 200 (RFC 7009 section 2.2).
	for _, tk := range []string{tok, "svc_at_not.a.token", "anything"} {
		if r := revoke(id, secret, "token", tk); r.Status != http.StatusOK {
			t.Fatalf("revoke %q: %d %s", tk, r.Status, r.Body)
		}
	}
	// Another client's token is refused (RFC 7009 section 2.1), and lives.
	r = revoke(otherID, otherSecret, "token", keep)
	wantStatus(t, r, http.StatusBadRequest)
	wantJSON(t, r, `{"error":"unauthorized_client","error_description":"the token was not issued to this client"}`)
	if decode(t, introspect(t, e.url, id, secret, keep).Body)["active"] != true {
		t.Fatal("another client revoked the token")
	}
	r = revoke(id, secret)
	wantStatus(t, r, http.StatusBadRequest)
	wantJSON(t, r, bodyInvalidRequest("token is required"))
	r = revoke(id, "svc_cs_wrong", "token", keep)
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
	if r := get(t, e.url+PathRevoke); r.Status != http.StatusMethodNotAllowed {
		t.Fatalf("GET revoke: %d", r.Status)
	}
}

// TestTwoSecrets: a rotation without downtime. Both secrets work while both
// are held; retiring one kills it and its tokens, and only those.
func TestTwoSecrets(t *testing.T) {
	e := newEnv(t)
	id, first := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	tok1 := e.token(t, e.url, id, first, "")
	_, sid, second, err := e.store.AddSecret(context.Background(), id)
	if err != nil || sid != 2 {
		t.Fatalf("AddSecret: %d %v", sid, err)
	}
	tok2 := e.token(t, e.url, id, second, "")
	if _, claims := tokenParts(t, tok2); claims["secret_id"] != 2.0 {
		t.Fatalf("token of secret 2: claims %v", claims)
	}
	if _, claims := tokenParts(t, e.token(t, e.url, id, first, "")); claims["secret_id"] != nil {
		t.Fatalf("token of secret 1 names a secret: %v", claims)
	}
	if _, _, _, err := e.store.AddSecret(context.Background(), id); err == nil || !strings.Contains(err.Error(), "already holds two secrets") {
		t.Fatalf("a third secret: %v", err)
	}
	if _, err := e.store.RetireSecret(context.Background(), id, 1); err != nil {
		t.Fatal(err)
	}
	r := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, first))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, introspect(t, e.url, id, second, tok1), bodyInactive)
	if decode(t, introspect(t, e.url, id, second, tok2).Body)["active"] != true {
		t.Fatal("retiring secret 1 killed a token of secret 2")
	}
	if _, err := e.store.RetireSecret(context.Background(), id, 2); err == nil || !strings.Contains(err.Error(), "only secret") {
		t.Fatalf("retiring the only secret: %v", err)
	}
}
