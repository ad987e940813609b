package tokenserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

var jtiRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

// TestTokenFormat (point 9): the token is a JWS with typ at+jwt, the
// signing kid and EdDSA, carrying exactly the registered claims, with
// exp = iat + 3600 on the injected clock; it verifies against the published
// JWKS; after a secret rotation it is dead.
func TestTokenFormat(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead, clients.ScopeReferralsWrite)
	tok := e.token(t, e.url, id, secret, "referrals.write")

	hdr, claims := tokenParts(t, tok)
	wantMap(t, "header", hdr, map[string]any{"typ": "at+jwt", "kid": e.keys.SigningKeyID(), "alg": "EdDSA"})
	jti, _ := claims["jti"].(string)
	if !jtiRE.MatchString(jti) {
		t.Errorf("jti %q is not 128 random bits in base64url", jti)
	}
	iat := float64(epoch.Unix())
	wantMap(t, "claims", claims, map[string]any{
		"iss": testIssuer, "sub": id, "client_id": id, "aud": testAudience,
		"iat": iat, "exp": iat + 3600, "jti": jti, "scope": "referrals.write", "gen": float64(1),
	})
	// Every token has its own jti.
	if _, c2 := tokenParts(t, e.token(t, e.url, id, secret, "")); c2["jti"] == jti {
		t.Error("two tokens share a jti")
	}

	// The signature verifies with the published key set, and only with it.
	set, err := jwk.Parse(get(t, e.url+PathJWKS).Body)
	if err != nil {
		t.Fatal(err)
	}
	compact := []byte(strings.TrimPrefix(tok, accesstoken.Prefix))
	if _, err := jws.Verify(compact, jws.WithKeySet(set)); err != nil {
		t.Errorf("token does not verify against the JWKS: %v", err)
	}
	if _, err := jws.Verify(compact, jws.WithKeySet(newKeySet(t).Public())); err == nil {
		t.Error("token verifies against a foreign key set")
	}

	// Rotation: the old token dies at once, the new one carries gen 2.
	r := introspect(t, e.url, id, secret, tok)
	wantStatus(t, r, http.StatusOK)
	if decode(t, r.Body)["active"] != true {
		t.Fatalf("fresh token inactive: %s", r.Body)
	}
	_, newSecret, err := e.store.RotateSecret(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	r = introspect(t, e.url, id, newSecret, tok)
	wantStatus(t, r, http.StatusOK)
	wantHeaders(t, r, oauthHeaders(nil))
	wantJSON(t, r, bodyInactive)
	// The old secret no longer authenticates.
	r = post(t, e.url+PathToken, formType, grant(), basic(id, secret))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
	tok2 := e.token(t, e.url, id, newSecret, "")
	if _, c := tokenParts(t, tok2); c["gen"] != float64(2) || c["scope"] != "patients.read referrals.write" {
		t.Errorf("token after rotation: claims %v", c)
	}
	if decode(t, introspect(t, e.url, id, newSecret, tok2).Body)["active"] != true {
		t.Error("token issued after rotation is inactive")
	}
}

func wantMap(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

// activeBody is the exact introspection answer for an active token.
func activeBody(t *testing.T, token string) string {
	t.Helper()
	_, c := tokenParts(t, token)
	b, _ := json.Marshal(map[string]any{
		"active": true, "scope": c["scope"], "client_id": c["client_id"], "token_type": "Bearer",
		"exp": c["exp"], "iat": c["iat"], "sub": c["sub"], "aud": c["aud"], "iss": c["iss"], "jti": c["jti"],
	})
	return string(b)
}

// tamper replaces the claims of a token, keeping its header and signature.
func tamper(t *testing.T, token string, edit func(map[string]any)) string {
	t.Helper()
	parts := strings.Split(strings.TrimPrefix(token, accesstoken.Prefix), ".")
	_, claims := tokenParts(t, token)
	edit(claims)
	b, _ := json.Marshal(claims)
	return accesstoken.Prefix + parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
}

// TestIntrospection (point 12): caller authentication as on the token
// endpoint; the exact active answer for the caller's own live token and
// exactly {"active":false} for anything else.
func TestIntrospection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withFailures(1000))
	id, secret := e.client(clients.AudienceHospital, clients.AllScopes...)
	otherID, otherSecret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	tok := e.token(t, e.url, id, secret, "patients.read events.subscribe")
	otherTok := e.token(t, e.url, otherID, otherSecret, "")
	active := activeBody(t, tok)
	if !strings.Contains(active, `"scope":"events.subscribe patients.read"`) {
		t.Fatalf("active body %s", active)
	}

	// Tokens this service never issued, though well-formed.
	foreignKeys := newKeySet(t)
	fromKeys := func(keys *accesstoken.KeySet, iss, aud string) string {
		is, err := accesstoken.NewIssuer(keys, iss, aud)
		if err != nil {
			t.Fatal(err)
		}
		s, _, err := is.Issue(accesstoken.Grant{ClientID: id, Scope: "patients.read", Generation: 1, Now: epoch})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	parts := strings.Split(tok, ".")
	sig := []byte(parts[2])
	sig[5] ^= 1
	flipped := parts[0] + "." + parts[1] + "." + string(sig)

	tests := []struct {
		name      string
		ct        string
		body      string
		mods      []func(*http.Request)
		status    int
		want      string
		challenge bool
	}{
		{name: "own token, basic", ct: formType, body: form("token", tok), mods: mods(basic(id, secret)), status: 200, want: active},
		{name: "own token, form", ct: formType, body: form("token", tok, "client_id", id, "client_secret", secret), status: 200, want: active},
		{name: "own token, json", ct: jsonType, body: jsonBody("token", tok, "client_id", id, "client_secret", secret), status: 200, want: active},
		{name: "own token, percent-encoded basic", ct: formType, body: form("token", tok), mods: mods(basicRaw(pctAll(id), pctAll(secret))), status: 200, want: active},
		{name: "token_type_hint access_token", ct: formType, body: form("token", tok, "token_type_hint", "access_token"), mods: mods(basic(id, secret)), status: 200, want: active},
		{name: "token_type_hint refresh_token is only a hint", ct: formType, body: form("token", tok, "token_type_hint", "refresh_token"), mods: mods(basic(id, secret)), status: 200, want: active},
		{name: "another client's token", ct: formType, body: form("token", otherTok), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "own token asked by another client", ct: formType, body: form("token", tok), mods: mods(basic(otherID, otherSecret)), status: 200, want: bodyInactive},
		{name: "tampered signature", ct: formType, body: form("token", flipped), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "tampered scope", ct: formType, body: form("token", tamper(t, tok, func(c map[string]any) { c["scope"] = allScopes })), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "tampered expiry", ct: formType, body: form("token", tamper(t, tok, func(c map[string]any) { c["exp"] = c["exp"].(float64) + 3600 })), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "signed by a foreign key", ct: formType, body: form("token", fromKeys(foreignKeys, testIssuer, testAudience)), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "our key, foreign issuer", ct: formType, body: form("token", fromKeys(e.keys, "https://evil.example", testAudience)), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "our key, foreign audience", ct: formType, body: form("token", fromKeys(e.keys, testIssuer, "other-api")), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "our key, our claims (control)", ct: formType, body: form("token", fromKeys(e.keys, testIssuer, testAudience)), mods: mods(basic(id, secret)), status: 200, want: ""},
		{name: "without prefix", ct: formType, body: form("token", strings.TrimPrefix(tok, accesstoken.Prefix)), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "malformed", ct: formType, body: form("token", "svc_at_not.a.jwt"), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "garbage", ct: formType, body: form("token", "hello"), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "oversized", ct: formType, body: form("token", tok+strings.Repeat("A", 5000)), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "client secret as token", ct: formType, body: form("token", secret), mods: mods(basic(id, secret)), status: 200, want: bodyInactive},
		{name: "token missing", ct: formType, body: form("token_type_hint", "access_token"), mods: mods(basic(id, secret)), status: 400, want: bodyInvalidRequest("token is required")},
		{name: "token repeated", ct: formType, body: form("token", tok, "token", tok), mods: mods(basic(id, secret)), status: 400, want: bodyInvalidRequest(`parameter "token" is repeated`)},
		{name: "text/plain", ct: "text/plain", body: form("token", tok), mods: mods(basic(id, secret)), status: 400, want: bodyInvalidRequest("Content-Type must be application/x-www-form-urlencoded or application/json")},
		{name: "both auth methods", ct: formType, body: form("token", tok, "client_secret", secret), mods: mods(basic(id, secret)), status: 400, want: bodyInvalidRequest("use one client authentication method: HTTP Basic or client_id and client_secret in the body, not both")},
		{name: "wrong caller secret, basic", ct: formType, body: form("token", tok), mods: mods(basic(id, otherSecret)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "wrong caller secret, form", ct: formType, body: form("token", tok, "client_id", id, "client_secret", otherSecret), status: 401, want: bodyInvalidClient},
		{name: "unknown caller", ct: formType, body: form("token", tok), mods: mods(basic(clients.NewClientID(), secret)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "no caller authentication", ct: formType, body: form("token", tok), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "bearer token as caller authentication", ct: formType, body: form("token", tok), mods: mods(header("Authorization", "Bearer "+tok)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "wrong secret and missing token", ct: formType, body: "", mods: mods(basic(id, otherSecret)), status: 401, want: bodyInvalidClient, challenge: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := post(t, e.url+PathIntrospect, tc.ct, tc.body, tc.mods...)
			wantStatus(t, r, tc.status)
			challenge := ""
			if tc.challenge {
				challenge = basicChallenge
			}
			wantHeaders(t, r, oauthHeaders(map[string]string{"WWW-Authenticate": challenge}))
			if tc.want == "" { // the control: a token minted with our key and claims is active
				if decode(t, r.Body)["active"] != true {
					t.Errorf("control token inactive: %s", r.Body)
				}
				return
			}
			wantJSON(t, r, tc.want)
		})
	}
}

// TestIntrospectionExpiry: expiry on the injected clock, no sleeping. A
// token is active until the second before exp and inactive from exp on; one
// issued more than the leeway in the future is refused too.
func TestIntrospectionExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	tok := e.token(t, e.url, id, secret, "")
	active := activeBody(t, tok)
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{0, active},
		{3599 * time.Second, active},
		{3600 * time.Second, bodyInactive},
		{24 * time.Hour, bodyInactive},
		{-accesstoken.Leeway, active},
		{-accesstoken.Leeway - time.Second, bodyInactive},
	} {
		t.Run("at iat"+fmtOffset(tc.at), func(t *testing.T) { // sequential: one clock
			e.now.Set(epoch.Add(tc.at))
			r := introspect(t, e.url, id, secret, tok)
			wantStatus(t, r, http.StatusOK)
			wantJSON(t, r, tc.want)
		})
	}
	// A token issued now lives from now.
	e.now.Set(epoch.Add(2 * time.Hour))
	tok2 := e.token(t, e.url, id, secret, "")
	if _, c := tokenParts(t, tok2); c["iat"] != float64(epoch.Add(2*time.Hour).Unix()) {
		t.Errorf("iat %v", c["iat"])
	}
	wantJSON(t, introspect(t, e.url, id, secret, tok2), activeBody(t, tok2))
}

// TestIntrospectionRevoked: revocation kills every token of the client. The
// revoked client can no longer authenticate, so it gets invalid_client; any
// other caller gets {"active":false}.
func TestIntrospectionRevoked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	otherID, otherSecret := e.client(clients.AudiencePharma)
	tok := e.token(t, e.url, id, secret, "")
	wantJSON(t, introspect(t, e.url, id, secret, tok), activeBody(t, tok))
	if _, err := e.store.Revoke(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	r := introspect(t, e.url, id, secret, tok)
	wantStatus(t, r, http.StatusUnauthorized)
	wantHeaders(t, r, oauthHeaders(map[string]string{"WWW-Authenticate": basicChallenge}))
	wantJSON(t, r, bodyInvalidClient)
	r = introspect(t, e.url, otherID, otherSecret, tok)
	wantStatus(t, r, http.StatusOK)
	wantJSON(t, r, bodyInactive)
	r = post(t, e.url+PathToken, formType, grant(), basic(id, secret))
	wantStatus(t, r, http.StatusUnauthorized)
	wantJSON(t, r, bodyInvalidClient)
}

func fmtOffset(d time.Duration) string {
	if d < 0 {
		return d.String()
	}
	return "+" + d.String()
}
