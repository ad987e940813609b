package tokenserver

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
)

// proofKey is a DPoP key pair: ES256, its public JWK as JSON and its
// RFC 7638 thumbprint.
type proofKey struct {
	priv *ecdsa.PrivateKey
	pub  string
	jkt  string
}

func newProofKey(t testing.TB) *proofKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := jwk.Import(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	pub, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return &proofKey{priv: priv, pub: string(pub), jkt: base64.RawURLEncoding.EncodeToString(tp)}
}

// proofClaims are a good proof's claims for the token endpoint at now.
func proofClaims(jti string, now time.Time) map[string]any {
	return map[string]any{"jti": jti, "htm": "POST", "htu": testIssuer + PathToken, "iat": now.Unix()}
}

// sign makes a proof of the given header (JSON text; "" the good one) and
// claims, signed with the key whatever they say.
func (k *proofKey) sign(t testing.TB, header string, claims map[string]any) string {
	t.Helper()
	if header == "" {
		header = `{"typ":"dpop+jwt","alg":"ES256","jwk":` + k.pub + `}`
	}
	c, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	input := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString(c)
	sig, err := jwsbb.Sign(k.priv, "ES256", []byte(input), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// proof is a good proof with a jti of its own.
func (k *proofKey) proof(t testing.TB, now time.Time) string {
	t.Helper()
	var jti [12]byte
	_, _ = rand.Read(jti[:])
	return k.sign(t, "", proofClaims(base64.RawURLEncoding.EncodeToString(jti[:]), now))
}

// dpopTokenReply checks a 200 DPoP token answer byte for byte (RFC 9449
// section 5) and that the token is bound to jkt (cnf, section 6.1); it
// returns the token.
func dpopTokenReply(t testing.TB, r reply, scope, jkt string) string {
	t.Helper()
	wantStatus(t, r, http.StatusOK)
	wantHeaders(t, r, oauthHeaders(nil))
	tok := mustToken(t, r)
	want, _ := json.Marshal(map[string]any{"access_token": tok, "token_type": "DPoP", "expires_in": 3600, "scope": scope})
	if !bytes.Equal(r.Body, want) {
		t.Fatalf("token body:\n got %s\nwant %s", r.Body, want)
	}
	_, c := tokenParts(t, tok)
	cnf, _ := json.Marshal(c["cnf"])
	if string(cnf) != `{"jkt":"`+jkt+`"}` {
		t.Fatalf("token cnf %s, want {\"jkt\":%q}", cnf, jkt)
	}
	return tok
}

// bodyProof is the answer to a refused proof (RFC 9449 section 5).
func bodyProof(desc string) string {
	b, _ := json.Marshal(map[string]string{"error": "invalid_dpop_proof", "error_description": desc})
	return string(b)
}

// dpopActiveBody is introspection's answer for an active bound token (RFC
// 9449 section 6.2): the bearer answer with token_type DPoP and cnf.
func dpopActiveBody(t *testing.T, token, jkt string) string {
	t.Helper()
	_, c := tokenParts(t, token)
	b, _ := json.Marshal(map[string]any{
		"active": true, "scope": c["scope"], "client_id": c["client_id"], "token_type": "DPoP",
		"exp": c["exp"], "iat": c["iat"], "sub": c["sub"], "aud": c["aud"], "iss": c["iss"], "jti": c["jti"],
		"cnf": map[string]string{"jkt": jkt},
	})
	return string(b)
}

// TestDPoPToken: a token request with a DPoP proof gets a DPoP-bound token
// (token_type DPoP, cnf.jkt the proof key's thumbprint), described so by
// introspection; the proof's jti is single use across replicas (two
// servers on one Redis); without the header the answer is the bearer one,
// byte for byte.
func TestDPoPToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	k := newProofKey(t)
	p := k.proof(t, epoch)
	tok := dpopTokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret), header("DPoP", p)),
		"events.subscribe", k.jkt)
	r := introspect(t, e.url, id, secret, tok)
	wantStatus(t, r, http.StatusOK)
	wantJSON(t, r, dpopActiveBody(t, tok, k.jkt))

	// The same proof again, on this replica and on another: refused.
	second, _ := e.start(e.keys)
	for _, base := range []string{e.url, second} {
		r := post(t, base+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret), header("DPoP", p))
		wantStatus(t, r, http.StatusBadRequest)
		wantHeaders(t, r, oauthHeaders(map[string]string{"WWW-Authenticate": ""}))
		wantJSON(t, r, bodyProof("the DPoP proof was used before"))
	}
	// A new proof of the same key, on the other replica: a new token, JSON
	// body and client_secret_post alike.
	dpopTokenReply(t, post(t, second+PathToken, "application/json",
		jsonBody("grant_type", "client_credentials", "client_id", id, "client_secret", secret), header("DPoP", k.proof(t, epoch))),
		"events.subscribe", k.jkt)

	// Without a DPoP header: the bearer answer, and introspection's.
	bearer := tokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret)), "events.subscribe")
	if _, c := tokenParts(t, bearer); c["cnf"] != nil {
		t.Fatalf("bearer token carries cnf %v", c["cnf"])
	}
	r = introspect(t, e.url, id, secret, bearer)
	wantStatus(t, r, http.StatusOK)
	wantJSON(t, r, activeBody(t, bearer))
	if got := counter(t, e.metrics, "partnerapi_token_refusals_total", map[string]string{"endpoint": "token", "reason": "invalid_dpop_proof"}); got != 2 {
		t.Errorf("invalid_dpop_proof refusals counted %v, want 2", got)
	}
}

// TestDPoPRefusals: every refused proof is 400 invalid_dpop_proof with
// dpop's fixed description (RFC 9449 section 5), answered only to an
// authenticated client: a wrong secret with any proof is invalid_client,
// and a good proof sent with a wrong secret is not spent.
func TestDPoPRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withFailures(1000), withCeiling(1000))
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	k := newProofKey(t)
	other := newProofKey(t)
	with := func(edit func(map[string]any)) string {
		c := proofClaims("jti-"+t.Name(), epoch)
		edit(c)
		return k.sign(t, "", c)
	}
	withPrivate := `{"typ":"dpop+jwt","alg":"ES256","jwk":` + strings.TrimSuffix(k.pub, "}") +
		`,"d":"` + base64.RawURLEncoding.EncodeToString(k.priv.D.FillBytes(make([]byte, 32))) + `"}}`
	tests := []struct {
		name    string
		headers []string
		desc    string
	}{
		{"typ JWT", []string{k.sign(t, `{"typ":"JWT","alg":"ES256","jwk":`+k.pub+`}`, proofClaims("a", epoch))}, "the DPoP proof's typ must be dpop+jwt"},
		{"no typ", []string{k.sign(t, `{"alg":"ES256","jwk":`+k.pub+`}`, proofClaims("a", epoch))}, "the DPoP proof's typ must be dpop+jwt"},
		{"htm GET", []string{with(func(c map[string]any) { c["htm"] = "GET" })}, "the DPoP proof's htm does not match the request's method"},
		{"htu the listening address", []string{with(func(c map[string]any) { c["htu"] = e.url + PathToken })}, "the DPoP proof's htu does not match the request's URI"},
		{"htu introspection", []string{with(func(c map[string]any) { c["htu"] = testIssuer + PathIntrospect })}, "the DPoP proof's htu does not match the request's URI"},
		{"iat 61 s old", []string{with(func(c map[string]any) { c["iat"] = epoch.Unix() - 61 })}, "the DPoP proof's iat is too old"},
		{"iat 6 s ahead", []string{with(func(c map[string]any) { c["iat"] = epoch.Unix() + 6 })}, "the DPoP proof's iat is in the future"},
		{"no jti", []string{with(func(c map[string]any) { delete(c, "jti") })}, "the DPoP proof's jti is missing or too long"},
		{"private key in jwk", []string{k.sign(t, withPrivate, proofClaims("a", epoch))}, "the DPoP proof's jwk holds private key material"},
		{"signed by another key", []string{other.sign(t, `{"typ":"dpop+jwt","alg":"ES256","jwk":`+k.pub+`}`, proofClaims("a", epoch))}, "the DPoP proof's signature does not verify with its jwk"},
		{"alg none", []string{base64.RawURLEncoding.EncodeToString([]byte(`{"typ":"dpop+jwt","alg":"none","jwk":`+k.pub+`}`)) + "." +
			base64.RawURLEncoding.EncodeToString([]byte(`{"jti":"a","htm":"POST","htu":"`+testIssuer+PathToken+`","iat":1}`)) + ".c2ln"},
			"the DPoP proof's alg is not supported (ES256 ES384 RS256 PS256 EdDSA Ed25519)"},
		{"malformed", []string{"not-a-jws"}, "the DPoP proof is not a JWS in compact serialization"},
		{"empty", []string{""}, "the DPoP proof is not a JWS in compact serialization"},
		{"two DPoP headers", []string{k.proof(t, epoch), k.proof(t, epoch)}, "exactly one DPoP header is allowed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mods := []func(*http.Request){basic(id, secret)}
			for _, h := range tc.headers {
				mods = append(mods, header("DPoP", h))
			}
			r := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), mods...)
			wantStatus(t, r, http.StatusBadRequest)
			wantHeaders(t, r, oauthHeaders(map[string]string{"WWW-Authenticate": ""}))
			wantJSON(t, r, bodyProof(tc.desc))

			// The same proof with a wrong secret: invalid_client, nothing of
			// the proof told.
			mods[0] = basic(id, clients.NewSecret())
			r = post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), mods...)
			wantStatus(t, r, http.StatusUnauthorized)
			wantJSON(t, r, bodyInvalidClient)
		})
	}

	// A good proof sent with a wrong secret is refused as invalid_client
	// and not spent: the right secret then gets a token with it.
	p := k.proof(t, epoch)
	r := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, clients.NewSecret()), header("DPoP", p))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
	dpopTokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret), header("DPoP", p)),
		"events.subscribe", k.jkt)

	// A malformed request is invalid_request before any proof is looked at.
	r = post(t, e.url+PathToken, formType, form("grant_type", "client_credentials", "scope", "a", "scope", "b"), basic(id, secret), header("DPoP", "x"))
	wantStatus(t, r, http.StatusBadRequest)
	wantJSON(t, r, bodyInvalidRequest(`parameter "scope" is repeated`))
}

// TestDPoPBoundClient: a client registered with dpop_bound_access_tokens
// (RFC 9449 section 5.2) gets no token without a proof, and a DPoP-bound
// one with; the refusal spends none of its token limit.
func TestDPoPBoundClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, secret, err := e.store.CreateClient(context.Background(), clients.ClientSpec{OrgSlug: "acme", Name: "bound",
		Audience: clients.AudiencePharma, Scopes: []string{clients.ScopeEventsSubscribe}, DPoPBound: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.SetTokenRateLimit(context.Background(), c.ID, 1); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(c.ID, secret))
		wantStatus(t, r, http.StatusBadRequest)
		wantHeaders(t, r, oauthHeaders(map[string]string{"WWW-Authenticate": ""}))
		wantJSON(t, r, bodyProof("a DPoP proof is required: this client is registered for DPoP-bound access tokens only"))
	}
	k := newProofKey(t)
	tok := dpopTokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(c.ID, secret), header("DPoP", k.proof(t, epoch))),
		"events.subscribe", k.jkt)
	r := introspect(t, e.url, c.ID, secret, tok)
	wantJSON(t, r, dpopActiveBody(t, tok, k.jkt))
	// The one token of its minute is spent now.
	r = post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(c.ID, secret), header("DPoP", k.proof(t, epoch)))
	wantStatus(t, r, http.StatusTooManyRequests)
	wantJSON(t, r, bodySlowDown)
}

// TestDPoPTokenDies: a bound token dies exactly as a bearer token: by
// revocation (RFC 7009), by the retirement of the secret it was issued for
// and by a rotation of the client's secret, as introspection shows.
func TestDPoPTokenDies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	k := newProofKey(t)
	get := func() string {
		return dpopTokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret), header("DPoP", k.proof(t, epoch))),
			"events.subscribe", k.jkt)
	}
	revoked, kept := get(), get()
	r := post(t, e.url+PathRevoke, formType, form("token", revoked), basic(id, secret))
	wantStatus(t, r, http.StatusOK)
	wantJSON(t, introspect(t, e.url, id, secret, revoked), bodyInactive)
	wantJSON(t, introspect(t, e.url, id, secret, kept), dpopActiveBody(t, kept, k.jkt))

	// Retirement: a token of the retired secret dies, the other's lives.
	_, sid, second, err := e.store.AddSecret(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	ofSecond := dpopTokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, second), header("DPoP", k.proof(t, epoch))),
		"events.subscribe", k.jkt)
	if _, err := e.store.RetireSecret(context.Background(), id, sid); err != nil {
		t.Fatal(err)
	}
	wantJSON(t, introspect(t, e.url, id, secret, ofSecond), bodyInactive)
	wantJSON(t, introspect(t, e.url, id, secret, kept), dpopActiveBody(t, kept, k.jkt))

	_, newSecret, err := e.store.RotateSecret(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON(t, introspect(t, e.url, id, newSecret, kept), bodyInactive)
}

// TestDPoPNonces (RFC 9449 section 8): with server nonces on, a proof
// without one is refused 400 use_dpop_nonce with the nonce in DPoP-Nonce,
// after the credential (a wrong secret is invalid_client, and gets no
// nonce-based verdict); the retry carrying the nonce gets a bound token,
// and the answer carries the nonce too. A nonce of another source (another
// deployment's secret) is refused the same way.
func TestDPoPNonces(t *testing.T) {
	t.Parallel()
	secret := bytes.Repeat([]byte{7}, 32)
	src, err := dpop.NewNonceSource(secret, dpop.DefaultNoncePeriod)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withNonces(src), withFailures(1000), withCeiling(1000))
	id, clientSecret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	k := newProofKey(t)
	nonce := src.Nonce(epoch)
	withNonce := func(n string) string {
		var jti [12]byte
		_, _ = rand.Read(jti[:])
		c := proofClaims(base64.RawURLEncoding.EncodeToString(jti[:]), epoch)
		if n != "" {
			c["nonce"] = n
		}
		return k.sign(t, "", c)
	}
	useNonce := func(desc string) string {
		b, _ := json.Marshal(map[string]string{"error": "use_dpop_nonce", "error_description": desc})
		return string(b)
	}

	// A wrong secret: invalid_client, whatever the proof says.
	r := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, "svc_cs_wrong"), header("DPoP", withNonce("")))
	wantStatus(t, r, http.StatusUnauthorized)
	// No nonce, then another deployment's nonce: use_dpop_nonce with ours.
	other, _ := dpop.NewNonceSource(bytes.Repeat([]byte{8}, 32), dpop.DefaultNoncePeriod)
	for n, desc := range map[string]string{"": "a DPoP nonce is required", other.Nonce(epoch): "the DPoP proof's nonce is not fresh"} {
		r = post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, clientSecret), header("DPoP", withNonce(n)))
		wantStatus(t, r, http.StatusBadRequest)
		wantHeaders(t, r, oauthHeaders(map[string]string{"DPoP-Nonce": nonce, "WWW-Authenticate": ""}))
		wantJSON(t, r, useNonce(desc))
	}
	// The retry with the nonce: a bound token, and the nonce again.
	r = post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, clientSecret), header("DPoP", withNonce(nonce)))
	if got := r.Header.Get("DPoP-Nonce"); got != nonce {
		t.Errorf("DPoP-Nonce on the token answer %q, want %q", got, nonce)
	}
	r.Header.Del("DPoP-Nonce")
	dpopTokenReply(t, r, "events.subscribe", k.jkt)
	// Without a DPoP header nothing changes: a bearer token, no nonce.
	r = post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, clientSecret))
	wantHeaders(t, r, map[string]string{"DPoP-Nonce": ""})
	tokenReply(t, r, "events.subscribe")
}
