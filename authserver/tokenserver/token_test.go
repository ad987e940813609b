package tokenserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/partnerapi/authplatform/pkg/clients"
)

const allScopes = "programme.metrics.read events.subscribe patients.read referrals.write"

// pctAll percent-encodes every byte of s, as a client that encodes more than
// it must would (RFC 6749 section 2.3.1 has the server decode it).
func pctAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, "%%%02X", s[i])
	}
	return b.String()
}

// onlyReader hides a reader's length so the request is sent chunked,
// without Content-Length.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func multipartBody(kv ...string) (string, string) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for i := 0; i+1 < len(kv); i += 2 {
		_ = w.WriteField(kv[i], kv[i+1])
	}
	_ = w.Close()
	return w.FormDataContentType(), buf.String()
}

// TestTokenEndpoint covers points 1-5 and 7: client authentication, body
// formats, grant type, scopes and client failures, one row each, asserting
// status, headers and the exact JSON body.
func TestTokenEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withFailures(1000))
	ctx := context.Background()
	hosp, hospSecret := e.client(clients.AudienceHospital, clients.AllScopes...)
	pharma, pharmaSecret := e.client(clients.AudiencePharma, clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe)
	none, noneSecret := e.client(clients.AudiencePSPPartner)
	revoked, revokedSecret := e.client(clients.AudiencePharma, clients.ScopeProgrammeMetricsRead)
	if _, err := e.store.Revoke(ctx, revoked); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{hosp, pharma, none} {
		if _, err := e.store.SetTokenRateLimit(ctx, id, 10000); err != nil {
			t.Fatal(err)
		}
	}
	unknown := clients.NewClientID()
	gt := []string{"grant_type", "client_credentials"}
	with := func(kv ...string) []string { return append(append([]string{}, gt...), kv...) }
	hospForm := with("client_id", hosp, "client_secret", hospSecret)
	mpType, mpBody := multipartBody(hospForm...)
	big := form(hospForm...) + "&pad="
	exact := big + strings.Repeat("a", MaxBodyBytes-len(big))
	over := exact + "a"
	tooMany := strings.TrimSpace(strings.Repeat("events.subscribe ", 17))

	const (
		errBody    = "body must be form fields or a JSON object of string values"
		errType    = "Content-Type must be application/x-www-form-urlencoded or application/json"
		errBasic   = "malformed HTTP Basic credentials"
		errBoth    = "use one client authentication method: HTTP Basic or client_id and client_secret in the body, not both"
		errSize    = "request body is larger than 64 KiB"
		errGrant   = "grant_type is required"
		errUTF8    = "parameters must be valid UTF-8 without NUL characters"
		errRepeatG = `parameter "grant_type" is repeated`
	)

	tests := []struct {
		name      string
		query     string
		ct        string
		body      string
		reader    func() io.Reader // instead of body
		mods      []func(*http.Request)
		status    int
		scope     string // on 200: the granted scope
		want      string // otherwise: the exact body
		challenge bool   // a 401 answered with WWW-Authenticate: Basic
	}{
		// 1. Client authentication.
		{name: "1 basic", ct: formType, body: form(gt...), mods: mods(basic(hosp, hospSecret)), status: 200, scope: allScopes},
		{name: "1 basic percent-encoded", ct: formType, body: form(gt...), mods: mods(basicRaw(pctAll(hosp), pctAll(hospSecret))), status: 200, scope: allScopes},
		{name: "1 basic scheme is case-insensitive", ct: formType, body: form(gt...), mods: mods(func(r *http.Request) {
			basic(hosp, hospSecret)(r)
			r.Header.Set("Authorization", "basic"+strings.TrimPrefix(r.Header.Get("Authorization"), "Basic"))
		}), status: 200, scope: allScopes},
		{name: "1 basic with a bad percent-escape", ct: formType, body: form(gt...), mods: mods(basicRaw("svc_%zz", "x")), status: 400, want: bodyInvalidRequest(errBasic)},
		{name: "1 basic without a colon", ct: formType, body: form(gt...), mods: mods(header("Authorization", "Basic c3ZjX25vY29sb24=")), status: 400, want: bodyInvalidRequest(errBasic)},
		{name: "1 basic not base64", ct: formType, body: form(gt...), mods: mods(header("Authorization", "Basic !!!")), status: 400, want: bodyInvalidRequest(errBasic)},
		{name: "1 repeated Authorization header", ct: formType, body: form(gt...), mods: mods(basic(hosp, hospSecret), basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest("Authorization header is repeated")},
		{name: "1 bearer scheme", ct: formType, body: form(gt...), mods: mods(header("Authorization", "Bearer svc_at_x")), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "1 form fields", ct: formType, body: form(hospForm...), status: 200, scope: allScopes},
		{name: "1 json fields", ct: jsonType, body: jsonBody(hospForm...), status: 200, scope: allScopes},
		{name: "1 basic and form secret", ct: formType, body: form(with("client_secret", hospSecret)...), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(errBoth)},
		{name: "1 basic and form id and secret", ct: formType, body: form(hospForm...), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(errBoth)},
		{name: "1 basic and json id and secret", ct: jsonType, body: jsonBody(hospForm...), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(errBoth)},
		{name: "1 basic and another form client_id", ct: formType, body: form(with("client_id", pharma)...), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(errBoth)},
		{name: "1 basic and the same form client_id", ct: formType, body: form(with("client_id", hosp)...), mods: mods(basic(hosp, hospSecret)), status: 200, scope: allScopes},
		{name: "1 no client authentication", ct: formType, body: form(gt...), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "1 form client_id without secret", ct: formType, body: form(with("client_id", hosp)...), status: 401, want: bodyInvalidClient},

		// 2. Body formats.
		{name: "2 form with charset", ct: formType + "; charset=UTF-8", body: form(hospForm...), status: 200, scope: allScopes},
		{name: "2 json with charset", ct: jsonType + "; charset=utf-8", body: jsonBody(hospForm...), status: 200, scope: allScopes},
		{name: "2 unknown parameters are ignored", ct: formType, body: form(with("client_id", hosp, "client_secret", hospSecret, "audience", "x")...), status: 200, scope: allScopes},
		{name: "2 json array", ct: jsonType, body: "[" + jsonBody(hospForm...) + "]", status: 400, want: bodyInvalidRequest(errBody)},
		{name: "2 json string", ct: jsonType, body: `"grant_type=client_credentials"`, status: 400, want: bodyInvalidRequest(errBody)},
		{name: "2 json number", ct: jsonType, body: `42`, status: 400, want: bodyInvalidRequest(errBody)},
		{name: "2 json number value", ct: jsonType, body: `{"grant_type":"client_credentials","scope":1}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(`value of "scope" must be a string`)},
		{name: "2 json null is absent", ct: jsonType, body: `{"grant_type":null}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest("grant_type is required")},
		{name: "2 json null optional scope", ct: jsonType, body: `{"grant_type":"client_credentials","scope":null}`, mods: mods(basic(hosp, hospSecret)), status: 200, scope: allScopes},
		{name: "2 json null client_secret", ct: jsonType, body: `{"grant_type":"client_credentials","client_id":"` + hosp + `","client_secret":null}`, status: 401, want: bodyInvalidClient},
		{name: "2 json unknown number", ct: jsonType, body: `{"grant_type":"client_credentials","request_id":42}`, mods: mods(basic(hosp, hospSecret)), status: 200, scope: allScopes},
		{name: "2 json unknown of every type", ct: jsonType, body: `{"a":{"b":[1,{"c":null}]},"grant_type":"client_credentials","d":[],"e":true,"f":null,"g":-1.5e3}`, mods: mods(basic(hosp, hospSecret)), status: 200, scope: allScopes},
		{name: "2 json unknown malformed", ct: jsonType, body: `{"grant_type":"client_credentials","a":[1,}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(errBody)},
		{name: "2 json unknown repeated", ct: jsonType, body: `{"grant_type":"client_credentials","a":1,"a":{}}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(`parameter "a" is repeated`)},
		{name: "2 json null repeated", ct: jsonType, body: `{"grant_type":"client_credentials","scope":null,"scope":"x"}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(`parameter "scope" is repeated`)},
		{name: "2 json scope array", ct: jsonType, body: `{"grant_type":"client_credentials","scope":["a"]}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(`value of "scope" must be a string`)},
		{name: "2 json client_id bool", ct: jsonType, body: `{"grant_type":"client_credentials","client_id":true}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(`value of "client_id" must be a string`)},
		{name: "2 json nested object", ct: jsonType, body: `{"grant_type":{"value":"client_credentials"}}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyUnsupported},
		{name: "2 json array value", ct: jsonType, body: `{"grant_type":["client_credentials"]}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyUnsupported},
		{name: "2 json duplicate key", ct: jsonType, body: `{"grant_type":"client_credentials","grant_type":"client_credentials"}`, mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(errRepeatG)},
		{name: "2 json trailing data", ct: jsonType, body: jsonBody(hospForm...) + "{}", status: 400, want: bodyInvalidRequest(errBody)},
		{name: "2 json truncated", ct: jsonType, body: `{"grant_type":"client_credentials"`, status: 400, want: bodyInvalidRequest(errBody)},
		{name: "2 json empty body", ct: jsonType, body: ``, status: 400, want: bodyInvalidRequest(errBody)},
		{name: "2 form bad percent-escape", ct: formType, body: form(hospForm...) + "&scope=%zz", status: 400, want: bodyInvalidRequest("malformed form body")},
		{name: "2 form repeated parameter", ct: formType, body: form(append(hospForm, gt...)...), status: 400, want: bodyInvalidRequest(errRepeatG)},
		{name: "2 form repeated client_id", ct: formType, body: form(append(hospForm, "client_id", hosp)...), status: 400, want: bodyInvalidRequest(`parameter "client_id" is repeated`)},
		{name: "2 form NUL", ct: formType, body: form(hospForm...) + "&scope=a%00b", status: 400, want: bodyInvalidRequest(errUTF8)},
		{name: "2 form invalid UTF-8", ct: formType, body: form(hospForm...) + "&scope=%FF", status: 400, want: bodyInvalidRequest(errUTF8)},
		{name: "2 text/plain", ct: "text/plain", body: form(hospForm...), status: 400, want: bodyInvalidRequest(errType)},
		{name: "2 multipart", ct: mpType, body: mpBody, status: 400, want: bodyInvalidRequest(errType)},
		{name: "2 no Content-Type", ct: "", body: form(hospForm...), status: 400, want: bodyInvalidRequest(errType)},
		{name: "2 malformed Content-Type", ct: "application/", body: form(hospForm...), status: 400, want: bodyInvalidRequest(errType)},
		{name: "2 body of exactly 64 KiB", ct: formType, body: exact, status: 200, scope: allScopes},
		{name: "2 body over 64 KiB (Content-Length)", ct: formType, body: over, status: 400, want: bodyInvalidRequest(errSize)},
		{name: "2 body over 64 KiB (chunked)", ct: formType, reader: func() io.Reader { return onlyReader{strings.NewReader(over)} }, status: 400, want: bodyInvalidRequest(errSize)},
		{name: "2 body of exactly 64 KiB (chunked)", ct: formType, reader: func() io.Reader { return onlyReader{strings.NewReader(exact)} }, status: 200, scope: allScopes},
		{name: "2 credentials in the query, empty body", query: "?" + form(hospForm...), ct: formType, body: "", status: 400, want: bodyInvalidRequest(errGrant)},
		{name: "2 credentials in the query", query: "?" + form("client_id", hosp, "client_secret", hospSecret), ct: formType, body: form(gt...), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "2 grant_type in the query", query: "?" + form(gt...), ct: formType, body: form("client_id", hosp, "client_secret", hospSecret), status: 400, want: bodyInvalidRequest(errGrant)},
		{name: "2 scope in the query is ignored", query: "?scope=nonsense", ct: formType, body: form(gt...), mods: mods(basic(hosp, hospSecret)), status: 200, scope: allScopes},

		// 3. Grant type.
		{name: "3 grant_type missing", ct: formType, body: form("scope", "events.subscribe"), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(errGrant)},
		{name: "3 grant_type empty", ct: formType, body: form("grant_type", ""), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidRequest(errGrant)},
		{name: "3 grant_type password", ct: formType, body: form("grant_type", "password", "username", "u", "password", "p"), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyUnsupported},
		{name: "3 grant_type authorization_code", ct: formType, body: form("grant_type", "authorization_code", "code", "c", "redirect_uri", "https://x"), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyUnsupported},
		{name: "3 grant_type refresh_token", ct: formType, body: form("grant_type", "refresh_token", "refresh_token", "r"), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyUnsupported},
		{name: "3 grant_type is case-sensitive", ct: formType, body: form("grant_type", "Client_Credentials"), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyUnsupported},
		{name: "3 grant_type other, no credentials", ct: formType, body: form("grant_type", "implicit"), status: 400, want: bodyUnsupported},

		// 4. Scope.
		{name: "4 scope omitted: every held scope", ct: formType, body: form(gt...), mods: mods(basic(pharma, pharmaSecret)), status: 200, scope: "programme.metrics.read events.subscribe"},
		{name: "4 scope empty: every held scope", ct: formType, body: form(with("scope", "")...), mods: mods(basic(pharma, pharmaSecret)), status: 200, scope: "programme.metrics.read events.subscribe"},
		{name: "4 narrowing to one", ct: formType, body: form(with("scope", "events.subscribe")...), mods: mods(basic(pharma, pharmaSecret)), status: 200, scope: "events.subscribe"},
		{name: "4 narrowing keeps the catalogue order", ct: formType, body: form(with("scope", "referrals.write patients.read events.subscribe")...), mods: mods(basic(hosp, hospSecret)), status: 200, scope: "events.subscribe patients.read referrals.write"},
		{name: "4 narrowing with extra spaces and a repeat", ct: formType, body: form(with("scope", " events.subscribe  events.subscribe ")...), mods: mods(basic(hosp, hospSecret)), status: 200, scope: "events.subscribe"},
		{name: "4 narrowing in json", ct: jsonType, body: jsonBody(with("scope", "patients.read")...), mods: mods(basic(hosp, hospSecret)), status: 200, scope: "patients.read"},
		{name: "4 scope not held", ct: formType, body: form(with("scope", "patients.read")...), mods: mods(basic(pharma, pharmaSecret)), status: 400, want: bodyInvalidScope},
		{name: "4 one of two scopes not held", ct: formType, body: form(with("scope", "programme.metrics.read referrals.write")...), mods: mods(basic(pharma, pharmaSecret)), status: 400, want: bodyInvalidScope},
		{name: "4 unknown scope", ct: formType, body: form(with("scope", "admin")...), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidScope},
		{name: "4 scope with a forbidden character", ct: formType, body: form(with("scope", `events.subscribe"`)...), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidScope},
		{name: "4 too many scope tokens", ct: formType, body: form(with("scope", tooMany)...), mods: mods(basic(hosp, hospSecret)), status: 400, want: bodyInvalidScope},
		{name: "4 client without scopes gets an empty scope", ct: formType, body: form(gt...), mods: mods(basic(none, noneSecret)), status: 200, scope: ""},
		{name: "4 client without scopes asking for one", ct: formType, body: form(with("scope", "events.subscribe")...), mods: mods(basic(none, noneSecret)), status: 400, want: bodyInvalidScope},

		// 5. Failed client authentication: one answer for all.
		{name: "5 unknown client (basic)", ct: formType, body: form(gt...), mods: mods(basic(unknown, hospSecret)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "5 unknown client (form)", ct: formType, body: form(with("client_id", unknown, "client_secret", hospSecret)...), status: 401, want: bodyInvalidClient},
		{name: "5 malformed client id", ct: formType, body: form(gt...), mods: mods(basic("not a client", hospSecret)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "5 wrong secret (basic)", ct: formType, body: form(gt...), mods: mods(basic(hosp, pharmaSecret)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "5 wrong secret (form)", ct: formType, body: form(with("client_id", hosp, "client_secret", pharmaSecret)...), status: 401, want: bodyInvalidClient},
		{name: "5 wrong secret (json)", ct: jsonType, body: jsonBody(with("client_id", hosp, "client_secret", pharmaSecret)...), status: 401, want: bodyInvalidClient},
		{name: "5 empty secret", ct: formType, body: form(gt...), mods: mods(basic(hosp, "")), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "5 revoked client", ct: formType, body: form(gt...), mods: mods(basic(revoked, revokedSecret)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "5 wrong secret and a scope not held", ct: formType, body: form(with("scope", "patients.read")...), mods: mods(basic(pharma, hospSecret)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "5 wrong secret and an unknown scope", ct: formType, body: form(with("scope", "admin")...), mods: mods(basic(pharma, hospSecret)), status: 401, want: bodyInvalidClient, challenge: true},
		{name: "5 revoked client and a scope not held", ct: formType, body: form(with("scope", "patients.read")...), mods: mods(basic(revoked, revokedSecret)), status: 401, want: bodyInvalidClient, challenge: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var body io.Reader = strings.NewReader(tc.body)
			if tc.reader != nil {
				body = tc.reader()
			}
			r := send(t, newRequest(t, http.MethodPost, e.url+PathToken+tc.query, tc.ct, body, tc.mods...))
			if r.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			if tc.status == http.StatusOK {
				tokenReply(t, r, tc.scope)
				wantHeaders(t, r, map[string]string{"WWW-Authenticate": ""})
				return
			}
			wantStatus(t, r, tc.status)
			challenge := ""
			if tc.challenge {
				challenge = basicChallenge
			}
			wantHeaders(t, r, oauthHeaders(map[string]string{"WWW-Authenticate": challenge, "Retry-After": ""}))
			wantJSON(t, r, tc.want)
		})
	}
}

func mods(m ...func(*http.Request)) []func(*http.Request) { return m }

// TestInvalidClientIndistinguishable: unknown client, wrong secret and
// revoked client get byte-identical answers (point 5), and each costs
// exactly one digest comparison, so they take one path.
func TestInvalidClientIndistinguishable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	revoked, revokedSecret := e.client(clients.AudienceHospital, clients.ScopePatientsRead)
	if _, err := e.store.Revoke(context.Background(), revoked); err != nil {
		t.Fatal(err)
	}
	attempts := map[string][2]string{
		"unknown client": {clients.NewClientID(), secret},
		"wrong secret":   {id, revokedSecret},
		"revoked client": {revoked, revokedSecret},
		"malformed id":   {"svc_!", secret},
	}
	var first []byte
	for name, c := range attempts {
		before := e.checked()
		r := post(t, e.url+PathToken, formType, form("grant_type", "client_credentials", "scope", "referrals.write"), basic(c[0], c[1]))
		wantStatus(t, r, http.StatusUnauthorized)
		wantHeaders(t, r, oauthHeaders(map[string]string{"WWW-Authenticate": basicChallenge}))
		if first == nil {
			first = r.Body
		}
		if !bytes.Equal(r.Body, first) {
			t.Errorf("%s: body %s differs from %s", name, r.Body, first)
		}
		if n := e.checked() - before; n != 1 {
			t.Errorf("%s: %d digest checks, want 1", name, n)
		}
	}
	wantJSON(t, reply{Body: first}, bodyInvalidClient)
	// The right secret still works: the failures above were the credentials'.
	tokenReply(t, post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret)), "patients.read")
}

// TestClientCredentialsLibrary is the happy path with the standard client,
// both ways it authenticates (point 1 and 7).
func TestClientCredentialsLibrary(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudienceHospital, clients.AllScopes...)
	for _, tc := range []struct {
		name   string
		style  oauth2.AuthStyle
		scopes []string
		want   string
	}{
		{"header, all scopes", oauth2.AuthStyleInHeader, nil, allScopes},
		{"params, all scopes", oauth2.AuthStyleInParams, nil, allScopes},
		{"header, narrowed", oauth2.AuthStyleInHeader, []string{"patients.read", "events.subscribe"}, "events.subscribe patients.read"},
		{"params, narrowed", oauth2.AuthStyleInParams, []string{"referrals.write"}, "referrals.write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: e.url + PathToken, Scopes: tc.scopes, AuthStyle: tc.style}
			tok, err := cfg.Token(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tok.AccessToken, "svc_at_") || tok.TokenType != "Bearer" || tok.RefreshToken != "" {
				t.Errorf("token %+v", tok)
			}
			if got := tok.Extra("scope"); got != tc.want {
				t.Errorf("scope %q, want %q", got, tc.want)
			}
			if got := tok.Extra("expires_in"); got != float64(3600) {
				t.Errorf("expires_in %v, want 3600", got)
			}
			r := introspect(t, e.url, id, secret, tok.AccessToken)
			wantStatus(t, r, http.StatusOK)
			if m := decode(t, r.Body); m["active"] != true || m["scope"] != tc.want {
				t.Errorf("introspection %s", r.Body)
			}
		})
	}
	// A wrong secret surfaces as the library's RetrieveError with the code.
	cfg := clientcredentials.Config{ClientID: id, ClientSecret: "svc_cs_wrong", TokenURL: e.url + PathToken, AuthStyle: oauth2.AuthStyleInHeader}
	_, err := cfg.Token(context.Background())
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.ErrorCode != "invalid_client" || re.Response.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %v", err)
	}
}

// TestNoSecretsLogged: access records carry the request id and client id,
// never a presented secret, even a wrong one or one pasted into the id.
func TestNoSecretsLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	tok := e.token(t, e.url, id, secret, "")
	post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(id, secret+"x"))
	post(t, e.url+PathToken, formType, form("grant_type", "client_credentials"), basic(secret, secret))
	introspect(t, e.url, id, secret, tok)
	logs := e.logs.String()
	if strings.Contains(logs, "svc_cs_") || strings.Contains(logs, secret) {
		t.Errorf("a secret reached the logs:\n%s", logs)
	}
	if strings.Contains(logs, tok) {
		t.Errorf("an access token reached the logs")
	}
	if !strings.Contains(logs, `"client_id":"`+id+`"`) || !strings.Contains(logs, `"request_id":"`) || !strings.Contains(logs, `"client_id":"(malformed)"`) {
		t.Errorf("access records lack client_id or request_id:\n%s", logs)
	}
}

// TestSharedHeaderValues: the field values every answer shares (answers)
// are the same after answers that add fields of their own (a challenge,
// Connection: close, Retry-After) as before, and each answer carries them.
func TestSharedHeaderValues(t *testing.T) {
	e := newEnv(t)
	id, secret := e.client(clients.AudienceHospital, clients.AllScopes...)
	for _, tt := range []struct {
		body   string
		mods   []func(*http.Request)
		status int
	}{
		{form("grant_type", "client_credentials"), mods(basic(id, secret)), http.StatusOK},
		{form("grant_type", "client_credentials"), nil, http.StatusUnauthorized},
		{form("grant_type", "client_credentials", "pad", strings.Repeat("a", MaxBodyBytes)), mods(basic(id, secret)), http.StatusBadRequest},
	} {
		r := post(t, e.url+PathToken, formType, tt.body, tt.mods...)
		if r.Status != tt.status {
			t.Fatalf("status %d, want %d: %s", r.Status, tt.status, r.Body)
		}
		for k, want := range map[string]string{"Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store", "Pragma": "no-cache"} {
			if got := r.Header.Values(k); len(got) != 1 || got[0] != want {
				t.Errorf("%d answer's %s: %q, want %q", r.Status, k, got, want)
			}
		}
	}
	for k, want := range map[string][]string{"Cache-Control": {"no-store"}, "Pragma": {"no-cache"}} {
		if got := noStoreHeader[k]; !slices.Equal(got, want) || cap(got) != 1 {
			t.Errorf("noStoreHeader[%s] = %q (cap %d), want %q", k, got, cap(got), want)
		}
	}
	if len(noStoreHeader) != 2 {
		t.Errorf("shared values changed: %v", noStoreHeader)
	}
}
