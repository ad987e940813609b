package api

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

const (
	challenge        = `Bearer realm="api"`
	invalidToken     = `Bearer realm="api", error="invalid_token"`
	invalidRequest   = `Bearer realm="api", error="invalid_request"`
	detailNoToken    = "authentication required: send Authorization: Bearer <ACCESS_TOKEN>"
	detailInvalid    = "invalid, expired or revoked access token"
	detailBadRequest = "malformed request: send the access token once, in the Authorization header only"
)

func TestAuthentication(t *testing.T) {
	f := newFixture(t)
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital, clients.AllScopes...)
	rotated := f.client("rotated", clients.EnvironmentLive, clients.AudiencePharma)
	revoked := f.client("revoked", clients.EnvironmentLive, clients.AudiencePharma)
	rotatedToken, revokedToken := f.token(rotated, ""), f.token(revoked, "")
	ctx := context.Background()
	if _, _, err := f.store.RotateSecret(ctx, rotated.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.Revoke(ctx, revoked.ID); err != nil {
		t.Fatal(err)
	}

	good := f.token(c, "patients.read")
	header, claims, sig := parts(t, good)
	kid := header["kid"].(string)

	// Signed by a key the server does not know.
	otherKey, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	otherSet, _ := accesstoken.NewKeySet(otherKey)
	otherIssuer, _ := accesstoken.NewIssuer(otherSet, testIssuer, testAudience)
	unknownKid, _, _ := otherIssuer.Issue(accesstoken.Grant{ClientID: c.ID, Generation: 1, Now: f.clock.Now()})
	// Signed by a key the server does not know, but claiming a known kid.
	h2, c2, sig2 := parts(t, unknownKid)
	h2["kid"] = kid
	wrongKey := forge(h2, c2, sig2)

	// Another issuer and another audience, signed with the right key.
	foreignIss, _ := accesstoken.NewIssuer(f.keys, "https://evil.example", testAudience)
	otherIssuerTok, _, _ := foreignIss.Issue(accesstoken.Grant{ClientID: c.ID, Generation: 1, Now: f.clock.Now()})
	foreignAud, _ := accesstoken.NewIssuer(f.keys, testIssuer, "another-api")
	otherAudTok, _, _ := foreignAud.Issue(accesstoken.Grant{ClientID: c.ID, Generation: 1, Now: f.clock.Now()})

	// Issued an hour ago: expired now (the clock is the server's).
	f.clock.Add(-accesstoken.Lifetime)
	expired := f.token(c, "")
	f.clock.Add(accesstoken.Lifetime)
	// Issued in the future, beyond the leeway.
	f.clock.Add(time.Minute)
	future := f.token(c, "")
	f.clock.Add(-time.Minute)

	// Tampered payload: scope widened, signature kept.
	tampered := clone(claims)
	tampered["scope"] = "patients.read referrals.write"
	// alg none, no signature (RFC 8725 section 2.1).
	none := clone(header)
	none["alg"] = "none"
	// HS256 keyed with the public key's bytes (RFC 8725 section 2.1).
	var pub ed25519.PublicKey
	pk, _ := f.keys.Public().LookupKeyID(kid)
	if err := jwk.Export(pk, &pub); err != nil {
		t.Fatal(err)
	}
	pubJSON, _ := json.Marshal(pk)
	hs := clone(header)
	hs["alg"] = "HS256"
	// Generation 0 and another client id than the subject.
	gen0 := clone(claims)
	gen0["gen"] = 0
	badSig := append([]byte{}, sig...)
	badSig[0] ^= 1

	tests := []struct {
		name      string
		header    []string // Authorization values; nil: none
		query     string
		status    int
		challenge string
		detail    string
	}{
		{"no header", nil, "", 401, challenge, detailNoToken},
		{"empty header", []string{""}, "", 401, challenge, detailNoToken},
		{"basic scheme", []string{"Basic c3ZjX2FiYzpzZWNyZXQ="}, "", 401, challenge, detailNoToken},
		{"token scheme", []string{"Token " + good}, "", 401, challenge, detailNoToken},
		{"scheme glued to token", []string{"Bearer" + good}, "", 401, challenge, detailNoToken},
		{"bearer without token", []string{"Bearer"}, "", 401, invalidToken, detailInvalid},
		{"bearer with blanks only", []string{"Bearer    "}, "", 401, invalidToken, detailInvalid},
		{"two tokens", []string{"Bearer " + good + " " + good}, "", 401, invalidToken, detailInvalid},
		{"not a b64token", []string{"Bearer svc_at_a,b"}, "", 401, invalidToken, detailInvalid},
		{"malformed", []string{"Bearer svc_at_notajwt"}, "", 401, invalidToken, detailInvalid},
		{"no prefix", []string{"Bearer " + strings.TrimPrefix(good, accesstoken.Prefix)}, "", 401, invalidToken, detailInvalid},
		{"too long", []string{"Bearer " + good + strings.Repeat("A", accesstoken.MaxTokenLength)}, "", 401, invalidToken, detailInvalid},
		{"bad signature", []string{"Bearer " + forge(header, claims, badSig)}, "", 401, invalidToken, detailInvalid},
		{"tampered payload", []string{"Bearer " + forge(header, tampered, sig)}, "", 401, invalidToken, detailInvalid},
		{"unknown kid", []string{"Bearer " + unknownKid}, "", 401, invalidToken, detailInvalid},
		{"known kid, other key", []string{"Bearer " + wrongKey}, "", 401, invalidToken, detailInvalid},
		{"alg none", []string{"Bearer " + forge(none, claims, nil)}, "", 401, invalidToken, detailInvalid},
		{"alg none with signature", []string{"Bearer " + forge(none, claims, sig)}, "", 401, invalidToken, detailInvalid},
		{"HS256 keyed with public key bytes", []string{"Bearer " + hmacToken(hs, claims, pub)}, "", 401, invalidToken, detailInvalid},
		{"HS256 keyed with public JWK", []string{"Bearer " + hmacToken(hs, claims, pubJSON)}, "", 401, invalidToken, detailInvalid},
		{"other issuer", []string{"Bearer " + otherIssuerTok}, "", 401, invalidToken, detailInvalid},
		{"other audience", []string{"Bearer " + otherAudTok}, "", 401, invalidToken, detailInvalid},
		{"expired", []string{"Bearer " + expired}, "", 401, invalidToken, detailInvalid},
		{"issued in the future", []string{"Bearer " + future}, "", 401, invalidToken, detailInvalid},
		{"generation 0", []string{"Bearer " + forge(header, gen0, sig)}, "", 401, invalidToken, detailInvalid},
		{"rotated secret", []string{"Bearer " + rotatedToken}, "", 401, invalidToken, detailInvalid},
		{"revoked client", []string{"Bearer " + revokedToken}, "", 401, invalidToken, detailInvalid},
		{"two Authorization headers", []string{"Bearer " + good, "Bearer " + good}, "", 400, invalidRequest, detailBadRequest},
		{"token in the query too", []string{"Bearer " + good}, "?access_token=" + good, 400, invalidRequest, detailBadRequest},
		{"token in the query only", nil, "?access_token=" + good, 400, invalidRequest, detailBadRequest},
	}
	s := f.server()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/me/"+tt.query, nil)
			for _, v := range tt.header {
				req.Header.Add("Authorization", v)
			}
			rec := serve(s.handler, req)
			wantJSON(t, rec, tt.status, map[string]any{"detail": tt.detail})
			wantHeader(t, rec, map[string]string{
				"WWW-Authenticate": tt.challenge,
				"Cache-Control":    "no-store",
				// Refused before the client is known: nothing counted.
				"RateLimit-Limit": "",
			})
			if tt.status == http.StatusUnauthorized {
				f.validate(req, rec)
			}
		})
	}

	// The good token itself, with the scheme in any case and any number of
	// spaces (RFC 9110 section 11.1, RFC 6750 section 2.1).
	for _, v := range []string{"Bearer " + good, "bearer " + good, "BEARER   " + good} {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
		req.Header.Set("Authorization", v)
		if rec := serve(s.handler, req); rec.Code != http.StatusOK {
			t.Errorf("%.20q: %d %s", v, rec.Code, rec.Body)
		}
	}
}

func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// hmacToken signs header.claims with HMAC-SHA256 under key.
func hmacToken(header, claims map[string]any, key []byte) string {
	unsigned := forge(header, claims, nil)
	input := strings.TrimSuffix(strings.TrimPrefix(unsigned, accesstoken.Prefix), ".")
	m := hmac.New(sha256.New, key)
	m.Write([]byte(input))
	return accesstoken.Prefix + input + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// A rotation or a revocation refuses the very next request on every replica,
// although both replicas have the token's signature cached.
func TestRotateAndRevokeAcrossReplicas(t *testing.T) {
	f := newFixture(t)
	a, b := f.server(), f.server()
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	ctx := context.Background()

	tok := f.token(c, "")
	for _, s := range []*server{a, b, a, b} {
		if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
			t.Fatalf("before rotation: %d %s", rec.Code, rec.Body)
		}
	}
	rotated, _, err := f.store.RotateSecret(ctx, c.ID) // what "authserver clients rotate-secret" runs
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*server{"a": a, "b": b} {
		rec := doGet(t, s.handler, "/api/v1/me/", tok)
		wantJSON(t, rec, http.StatusUnauthorized, map[string]any{"detail": detailInvalid})
		wantHeader(t, rec, map[string]string{"WWW-Authenticate": invalidToken})
		if t.Failed() {
			t.Fatalf("replica %s served a token of the old secret", name)
		}
	}
	// A token of the new generation works on both.
	fresh := f.token(rotated, "")
	for _, s := range []*server{a, b} {
		if rec := doGet(t, s.handler, "/api/v1/me/", fresh); rec.Code != http.StatusOK {
			t.Fatalf("after rotation, new token: %d %s", rec.Code, rec.Body)
		}
	}
	if _, err := f.store.Revoke(ctx, c.ID); err != nil { // "authserver clients revoke"
		t.Fatal(err)
	}
	for _, s := range []*server{b, a} {
		rec := doGet(t, s.handler, "/api/v1/me/", fresh)
		wantJSON(t, rec, http.StatusUnauthorized, map[string]any{"detail": detailInvalid})
	}
}

// cacheCount counts the verified-token cache's misses (each one a signature
// check) through the Metrics the server reports to.
type cacheCount struct {
	noMetrics
	misses int
}

func (m *cacheCount) TokenCache(hit bool) {
	if !hit {
		m.misses++
	}
}

// The signature is verified once per token; time on every request; and a key
// withdrawn from the set stops its cached tokens.
func TestTokenCache(t *testing.T) {
	f := newFixture(t)
	keys := &keySource{set: f.keys.Public()}
	deps := f.deps()
	deps.Keys = keys
	cv := &cacheCount{}
	deps.Metrics = cv
	s := f.newServer(nil, f.config(), deps)
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")

	for range 5 {
		if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
	if cv.misses != 1 {
		t.Errorf("%d signature checks for 5 requests with one token, want 1", cv.misses)
	}

	// One second before "exp": still good, from the cache.
	f.clock.Add(accesstoken.Lifetime - time.Second)
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
		t.Fatalf("before exp: %d %s", rec.Code, rec.Body)
	}
	// At "exp": refused although cached, and dropped from the cache.
	f.clock.Add(time.Second)
	rec := doGet(t, s.handler, "/api/v1/me/", tok)
	wantJSON(t, rec, http.StatusUnauthorized, map[string]any{"detail": detailInvalid})
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusUnauthorized || cv.misses != 2 {
		t.Errorf("expired token again: %d after %d signature checks, want 401 after a second one (dropped from the cache)", rec.Code, cv.misses)
	}

	// A cached token whose key is withdrawn is refused.
	tok = f.token(c, "")
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	other, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	otherSet, _ := accesstoken.NewKeySet(other)
	keys.swap(otherSet.Public(), nil)
	rec = doGet(t, s.handler, "/api/v1/me/", tok)
	wantJSON(t, rec, http.StatusUnauthorized, map[string]any{"detail": detailInvalid})
}

// fetchingKeys is a key source that counts fetches for unknown keys; a
// fetch publishes next, if set.
type fetchingKeys struct {
	keySource
	fetches int
	next    jwk.Set
}

func (k *fetchingKeys) FetchUnknownKey(context.Context, string) error {
	k.fetches++
	if k.next != nil {
		k.swap(k.next, nil)
		k.next = nil
	}
	return nil
}

// A token naming a key the set lacks makes the source fetch before the
// answer: the first token of a key published since the last fetch gets
// 200, a kid still unknown then 401; a good token or a bad signature under
// a known key fetches nothing, nor does a set not loaded yet (503: the
// source fetches it itself).
func TestUnknownKeyFetchesBeforeAnswering(t *testing.T) {
	f := newFixture(t)
	keys := &fetchingKeys{keySource: keySource{set: f.keys.Public()}}
	deps := f.deps()
	deps.Keys = keys
	s := f.newServer(nil, f.config(), deps)
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)

	if rec := doGet(t, s.handler, "/api/v1/me/", f.token(c, "")); rec.Code != 200 || keys.fetches != 0 {
		t.Fatalf("good token: %d, %d fetches", rec.Code, keys.fetches)
	}
	// A bad signature under a known key is no reason to fetch.
	h, cl, sig := parts(t, f.token(c, ""))
	sig[0] ^= 1
	if rec := doGet(t, s.handler, "/api/v1/me/", forge(h, cl, sig)); rec.Code != 401 || keys.fetches != 0 {
		t.Fatalf("bad signature: %d, %d fetches", rec.Code, keys.fetches)
	}
	issuer := func() *accesstoken.Issuer {
		k, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
		set, _ := accesstoken.NewKeySet(k)
		iss, _ := accesstoken.NewIssuer(set, testIssuer, testAudience)
		keys.next = set.Public()
		return iss
	}
	rotated := issuer()
	tok, _, _ := rotated.Issue(accesstoken.Grant{ClientID: c.ID, Generation: 1, Now: f.clock.Now()})
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != 200 || keys.fetches != 1 {
		t.Fatalf("first token of a newly published key: %d %s, %d fetches; want 200 after 1", rec.Code, rec.Body, keys.fetches)
	}
	junk := issuer()
	keys.next = nil // never published
	tok, _, _ = junk.Issue(accesstoken.Grant{ClientID: c.ID, Generation: 1, Now: f.clock.Now()})
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != 401 || keys.fetches != 2 {
		t.Fatalf("unknown kid: %d, %d fetches", rec.Code, keys.fetches)
	}
	keys.swap(nil, errors.New("not loaded"))
	if rec := doGet(t, s.handler, "/api/v1/me/", f.token(c, "")); rec.Code != 503 || keys.fetches != 2 {
		t.Fatalf("keys not loaded: %d, %d fetches", rec.Code, keys.fetches)
	}
}

// A token revoked by its client (RFC 7009) is refused on the very next
// request on every replica; the client's other tokens, and a retired
// secret's sibling's tokens, live on.
func TestRevokedAndRetiredTokens(t *testing.T) {
	f := newFixture(t)
	a, b := f.server(), f.server()
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	ctx := context.Background()
	revoked, kept := f.token(c, ""), f.token(c, "")
	for _, tok := range []string{revoked, kept} {
		if rec := doGet(t, a.handler, "/api/v1/me/", tok); rec.Code != http.StatusOK {
			t.Fatalf("before: %d %s", rec.Code, rec.Body)
		}
	}
	claims, err := accesstoken.NewVerifier(accesstoken.StaticKeys{Set: f.keys.Public()}, testIssuer, testAudience, f.clock.Now).Verify(revoked)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.RevokeToken(ctx, clients.TokenRefOf(claims), time.Unix(claims.ExpiresAt, 0)); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*server{a, b} {
		rec := doGet(t, s.handler, "/api/v1/me/", revoked)
		wantJSON(t, rec, http.StatusUnauthorized, map[string]any{"detail": detailInvalid})
		if rec := doGet(t, s.handler, "/api/v1/me/", kept); rec.Code != http.StatusOK {
			t.Fatalf("the other token after the revocation: %d %s", rec.Code, rec.Body)
		}
	}
	// Two secrets: retiring the first kills its tokens, not the second's.
	withSecond, _, _, err := f.store.AddSecret(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	second := f.token(withSecond, "") // issued for the newest secret
	if _, err := f.store.RetireSecret(ctx, c.ID, 1); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*server{a, b} {
		wantJSON(t, doGet(t, s.handler, "/api/v1/me/", kept), http.StatusUnauthorized, map[string]any{"detail": detailInvalid})
		if rec := doGet(t, s.handler, "/api/v1/me/", second); rec.Code != http.StatusOK {
			t.Fatalf("the second secret's token after retiring the first: %d %s", rec.Code, rec.Body)
		}
	}
}
