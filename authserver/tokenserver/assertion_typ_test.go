package tokenserver

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
)

// signTyp signs claims with k under a header of its kid, alg and typ
// ("": none).
func signTyp(t *testing.T, k assertiontest.Key, alg jwa.SignatureAlgorithm, typ string, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	h := jws.NewHeaders()
	_ = h.Set(jws.KeyIDKey, k.KID)
	if typ != "" {
		_ = h.Set(jws.TypeKey, typ)
	}
	b, err := jws.Sign(payload, jws.WithKey(alg, k.Signer, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAssertionTypAndAudience (issue 59, hole 9; draft-ietf-oauth-rfc7523bis):
// an assertion typed as an access token or a DPoP proof is refused, and
// its aud must be this server's issuer or token endpoint URL, alone: a
// string or a one-member array. Every refusal is the bare invalid_client
// of a wrong secret.
func TestAssertionTypAndAudience(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k := assertiontest.NewKey(t, "k1", jwa.ES256())
	id := e.keyedClient(clients.ClientKeySource{JWKS: assertiontest.JWKS(t, k)})
	now := e.now.Now()
	claims := func(aud any) map[string]any {
		c := assertiontest.Claims(id, testIssuer, now)
		c["aud"] = aud
		return c
	}
	for _, typ := range []string{"", "JWT", "jwt", "client-authentication+jwt", "application/client-authentication+jwt"} {
		a := signTyp(t, k, jwa.ES256(), typ, claims(testIssuer))
		tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(a)), clients.ScopePatientsRead)
	}
	for _, aud := range []any{testIssuer + PathToken, []string{testIssuer}, []string{testIssuer + PathToken}} {
		tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k.Sign(t, claims(aud)))), clients.ScopePatientsRead)
	}
	refused := map[string]string{}
	for _, typ := range []string{"at+jwt", "application/at+jwt", "AT+JWT", "dpop+jwt", "application/dpop+jwt", "DPoP+JWT"} {
		refused["typ "+typ] = signTyp(t, k, jwa.ES256(), typ, claims(testIssuer))
	}
	for name, aud := range map[string]any{
		"a foreign audience beside the token URL": []string{"https://elsewhere.test", testIssuer + PathToken},
		"the token URL beside a foreign audience": []string{testIssuer + PathToken, "https://elsewhere.test"},
		"both of its names":                       []string{testIssuer, testIssuer + PathToken},
		"an empty array":                          []string{},
		"a foreign audience":                      "https://elsewhere.test",
		"a number":                                7,
	} {
		refused["aud: "+name] = k.Sign(t, claims(aud))
	}
	for name, a := range refused {
		r := post(t, e.url+PathToken, formType, assertionForm(a))
		wantStatus(t, r, http.StatusUnauthorized)
		wantJSON(t, r, bodyInvalidClient)
		if t.Failed() {
			t.Fatalf("%s was not refused like a wrong secret", name)
		}
	}
	// Introspection authenticates its caller alike.
	tok := tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k.Sign(t, claims(testIssuer)))), clients.ScopePatientsRead)
	r := post(t, e.url+PathIntrospect, formType, form("client_assertion_type", AssertionType,
		"client_assertion", signTyp(t, k, jwa.ES256(), "at+jwt", claims(testIssuer)), "token", tok))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
}

// TestEd25519AlgNames (issue 59, hole 9; RFC 9864 section 2.2): an
// Ed25519 key registered with alg EdDSA verifies an assertion signed under
// the fully specified name Ed25519, and the reverse; a key registered
// without alg verifies both.
func TestEd25519AlgNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.now.Now()
	for _, registered := range []string{"EdDSA", "Ed25519", ""} {
		k := assertiontest.NewKey(t, "ed-"+registered, jwa.EdDSA())
		pub := k.PublicJWK(t)
		if registered != "" {
			if err := pub.Set(jwk.AlgorithmKey, registered); err != nil {
				t.Fatal(err)
			}
		}
		set := jwk.NewSet()
		if err := set.AddKey(pub); err != nil {
			t.Fatal(err)
		}
		doc, err := json.Marshal(set)
		if err != nil {
			t.Fatal(err)
		}
		id := e.keyedClient(clients.ClientKeySource{JWKS: doc})
		for _, alg := range []jwa.SignatureAlgorithm{jwa.EdDSA(), jwa.EdDSAEd25519()} {
			a := signTyp(t, k, alg, "JWT", assertiontest.Claims(id, testIssuer, now))
			r := post(t, e.url+PathToken, formType, assertionForm(a))
			if r.Status != http.StatusOK {
				t.Errorf("key registered with alg %q, assertion signed %s: %d %s", registered, alg, r.Status, r.Body)
			}
		}
	}
}

// TestJSONGrantTypeNotAString (issue 59, hole 13): in a JSON body, a
// grant_type that is not a string is a grant type other than
// client_credentials: unsupported_grant_type, as the partner API's error
// table says, not invalid_request. Introspection, which reads no
// grant_type, answers as before.
func TestJSONGrantTypeNotAString(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	for _, v := range []string{`123`, `true`, `false`, `["client_credentials"]`, `{"x":"client_credentials"}`, `1.5`} {
		r := post(t, e.url+PathToken, jsonType, `{"grant_type":`+v+`}`, basic(id, secret))
		wantStatus(t, r, http.StatusBadRequest)
		wantJSON(t, r, bodyUnsupported)
		if t.Failed() {
			t.Fatalf("grant_type %s", v)
		}
	}
	// null is absent; a string is read as it is; other members keep their
	// rule.
	r := post(t, e.url+PathToken, jsonType, `{"grant_type":null}`, basic(id, secret))
	wantStatus(t, r, http.StatusBadRequest)
	wantJSON(t, r, bodyInvalidRequest("grant_type is required"))
	tokenReply(t, post(t, e.url+PathToken, jsonType, `{"grant_type":"client_credentials"}`, basic(id, secret)), "events.subscribe")
	r = post(t, e.url+PathToken, jsonType, `{"grant_type":123,"scope":5}`, basic(id, secret))
	wantStatus(t, r, http.StatusBadRequest)
	wantJSON(t, r, bodyInvalidRequest(`value of "scope" must be a string`))
	r = post(t, e.url+PathIntrospect, jsonType, `{"grant_type":123,"token":"x"}`, basic(id, secret))
	wantStatus(t, r, http.StatusBadRequest)
	wantJSON(t, r, bodyInvalidRequest(`value of "grant_type" must be a string`))
}
