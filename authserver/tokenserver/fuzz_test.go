package tokenserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// Placeholders a fuzz input may hold; each run replaces them with the real
// client's, so the corpus reaches the authenticated code (scope narrowing,
// the per-client limit, signing) although every run creates a new client.
const (
	phID     = "{{ID}}"
	phSecret = "{{SECRET}}"
	phBasic  = "{{BASIC}}" // base64 of id:secret, for an Authorization header
)

// tokenErrorCodes are the documented error codes of the token endpoint, by
// status (resourceserver/apidocs/guides/errors.md, Token endpoint errors;
// RFC 6749 section 5.2). 503 cannot happen with Redis up.
var tokenErrorCodes = map[int][]string{
	http.StatusBadRequest:      {"invalid_request", "unsupported_grant_type", "invalid_scope"},
	http.StatusUnauthorized:    {"invalid_client"},
	http.StatusTooManyRequests: {"slow_down"},
}

// FuzzTokenRequest sends arbitrary method, Content-Type, Authorization and
// body to the whole token service handler (middleware, router, parser,
// go-oauth2, Redis) over httptest.NewRecorder on the test Redis. Whatever
// it gets, the handler must not panic and must answer a documented status
// in the documented shape: 200 with a verifiable token of the fuzz client
// and scopes it holds, or 400/401/429 {"error","error_description"} with a
// documented code, always JSON and no-store; any other method 405. The
// client secret must never reach the logs.
func FuzzTokenRequest(f *testing.F) {
	rdb := redistest.Client(f)
	prefix := redistest.Prefix(f, rdb)
	store := clients.NewStore(rdb, prefix, nil)
	ctx := context.Background()
	if _, err := store.CreateOrg(ctx, clients.OrgSpec{Slug: "fuzz", Name: "Fuzz", Environment: clients.EnvironmentSandbox}); err != nil {
		f.Fatal(err)
	}
	held := []string{clients.ScopeProgrammeMetricsRead, clients.ScopeEventsSubscribe, clients.ScopePatientsRead}
	cl, secret, err := store.CreateClient(ctx, clients.ClientSpec{OrgSlug: "fuzz", Name: "fuzz", Audience: clients.AudienceHospital, Scopes: held})
	if err != nil {
		f.Fatal(err)
	}
	keys := newKeySet(f)
	authority := newAuthority(f, keys)
	logs := &bytes.Buffer{}
	logger, err := logging.New(logs, "debug")
	if err != nil {
		f.Fatal(err)
	}
	// Every request runs in a window of its own (the rate clock moves a
	// minute per request), so the limits never mask what the parser does.
	rate := newClock(epoch)
	srv, err := NewServer(logger, Config{
		Issuer: testIssuer, Audience: testAudience, Now: func() time.Time { return epoch },
		RateNow: rate.Now,
	}, Deps{
		Registry: store, Keys: authority, Tokens: accesstoken.NewCachingVerifier(accesstoken.NewVerifier(authority, testIssuer, testAudience, func() time.Time { return epoch }), 0, nil),
		Ready: func(ctx context.Context) error { return redisconn.Ping(ctx, rdb, time.Second) },
	})
	if err != nil {
		f.Fatal(err)
	}
	verifier := accesstoken.NewVerifier(accesstoken.StaticKeys{Set: keys.Public()}, testIssuer, testAudience, func() time.Time { return epoch })

	for _, s := range []struct{ method, ct, auth, body string }{
		{"POST", formType, "Basic " + phBasic, "grant_type=client_credentials"},
		{"POST", formType, "Basic " + phBasic, "grant_type=client_credentials&scope=events.subscribe+patients.read"},
		{"POST", formType, "", "grant_type=client_credentials&client_id=" + phID + "&client_secret=" + phSecret},
		{"POST", jsonType, "", `{"grant_type":"client_credentials","client_id":"` + phID + `","client_secret":"` + phSecret + `","scope":"patients.read"}`},
		{"POST", jsonType + "; charset=utf-8", "Basic " + phBasic, `{"grant_type":"client_credentials"}`},
		{"POST", formType, "Basic " + phBasic, "grant_type=client_credentials&scope=referrals.write"},
		{"POST", formType, "Basic " + phBasic, "grant_type=client_credentials&scope=events.subscribe%09patients.read"},
		{"POST", formType, "Basic " + phBasic, "grant_type=password&username=a&password=b"},
		{"POST", formType, "Basic " + phBasic, "grant_type=client_credentials&grant_type=client_credentials"},
		{"POST", formType, "Basic " + phBasic, "grant_type=client_credentials&client_secret=" + phSecret},
		{"POST", formType, "Basic Zm9v", "grant_type=client_credentials"},
		{"POST", formType, "Basic !!!", "grant_type=client_credentials"},
		{"POST", formType, "Bearer x", "grant_type=client_credentials"},
		{"POST", formType, "", "grant_type=client_credentials&client_id=" + phSecret + "&client_secret=" + phSecret},
		{"POST", formType, "", "%zz=1"},
		{"POST", formType, "", "grant_type=client_credentials&scope=%FF%FE"},
		{"POST", jsonType, "", `{"grant_type":"client_credentials","scope":"\u0000"}`},
		{"POST", jsonType, "", `{"grant_type":["client_credentials"]}`},
		{"POST", jsonType, "", `[1,2,3]`},
		{"POST", jsonType, "", `{"a":"b"}{"c":"d"}`},
		{"POST", "text/plain", "", "grant_type=client_credentials"},
		{"POST", "", "", ""},
		{"POST", "multipart/form-data; boundary=x", "", "--x--"},
		{"POST", ";;;", "", ""},
		{"GET", "", "", ""},
		{"PUT", formType, "Basic " + phBasic, "grant_type=client_credentials"},
	} {
		f.Add(s.method, s.ct, s.auth, []byte(s.body))
	}

	basicCreds := base64.StdEncoding.EncodeToString([]byte(cl.ID + ":" + secret))
	fill := func(s string) string {
		return strings.NewReplacer(phBasic, basicCreds, phID, cl.ID, phSecret, secret).Replace(s)
	}
	f.Fuzz(func(t *testing.T, method, contentType, authorization string, body []byte) {
		req, err := http.NewRequest(method, PathToken, bytes.NewReader([]byte(fill(string(body)))))
		if err != nil {
			return // not a method net/http would hand a server
		}
		req.RemoteAddr = "192.0.2.1:1234"
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if authorization != "" {
			req.Header.Set("Authorization", fill(authorization))
		}
		rate.Add(time.Minute + time.Second)
		logs.Reset()
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req) // a panic fails the fuzz run
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("the client secret reached the logs:\n%s", logs)
		}
		res := rec.Result()
		got, _ := io.ReadAll(res.Body)
		if ct := res.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Fatalf("Content-Type %q; body %q", ct, got)
		}
		if method != http.MethodPost {
			if res.StatusCode != http.StatusMethodNotAllowed || string(got) != `{"error":"invalid_request","error_description":"this endpoint takes POST only"}` || res.Header.Get("Allow") != "POST" {
				t.Fatalf("%s: %d %s Allow=%q, want 405 method not allowed", method, res.StatusCode, got, res.Header.Get("Allow"))
			}
			return
		}
		if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Pragma") != "no-cache" {
			t.Fatalf("status %d without no-store/no-cache: %v", res.StatusCode, res.Header)
		}
		if res.StatusCode == http.StatusOK {
			checkTokenAnswer(t, verifier, got, cl.ID, held)
			return
		}
		codes, ok := tokenErrorCodes[res.StatusCode]
		if !ok {
			t.Fatalf("status %d is not a documented answer of the token endpoint; body %q", res.StatusCode, got)
		}
		var e map[string]any
		if err := json.Unmarshal(got, &e); err != nil || len(e) != 2 {
			t.Fatalf("status %d: body %q is not {error, error_description}", res.StatusCode, got)
		}
		code, _ := e["error"].(string)
		desc, _ := e["error_description"].(string)
		if !slices.Contains(codes, code) || desc == "" {
			t.Fatalf("status %d with error %q, description %q; want one of %v", res.StatusCode, code, desc, codes)
		}
		if res.StatusCode == http.StatusTooManyRequests {
			if n, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || n < 1 {
				t.Fatalf("429 with Retry-After %q", res.Header.Get("Retry-After"))
			}
		}
	})
}

// checkTokenAnswer checks a 200 body: exactly the four fields, a token that
// verifies, for the fuzz client, carrying only scopes it holds, in the
// body's "scope".
func checkTokenAnswer(t *testing.T, v *accesstoken.Verifier, body []byte, clientID string, held []string) {
	t.Helper()
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
		Scope       string `json:"scope"`
	}
	var all map[string]any
	if err := json.Unmarshal(body, &all); err != nil || len(all) != 4 || json.Unmarshal(body, &tok) != nil {
		t.Fatalf("200 body %q is not the token answer", body)
	}
	c, err := v.Verify(tok.AccessToken)
	if err != nil || tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 {
		t.Fatalf("200 body %q: token does not verify (%v) or wrong type/lifetime", body, err)
	}
	if c.ClientID != clientID || c.Scope != tok.Scope {
		t.Fatalf("token for %q with scope %q; answer scope %q", c.ClientID, c.Scope, tok.Scope)
	}
	for _, sc := range c.Scopes() {
		if !slices.Contains(held, sc) {
			t.Fatalf("token carries %q, which the client does not hold", sc)
		}
	}
}

// FuzzBasicCredentials fuzzes parseCredentials: an Authorization header (or
// two), and client_id / client_secret body parameters. It must not panic;
// it fails only with invalid_request (400) or invalid_client (401); what it
// accepts from Basic is valid UTF-8 and survives re-encoding; what it takes
// from the body is the body's; and any id and secret encoded as RFC 6749
// section 2.3.1 says are read back exactly (or refused as invalid_request
// when they are not UTF-8).
func FuzzBasicCredentials(f *testing.F) {
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, s := range []struct {
		auth, auth2 string
		id, secret  string
		form        uint8 // bit 0: client_id present, bit 1: client_secret present
	}{
		{"Basic " + enc("svc_abc:svc_cs_def"), "", "", "", 0},
		{"basic " + enc("svc_abc:svc_cs_def"), "", "svc_abc", "", 1},
		{"BASIC  " + enc("svc_abc:svc_cs_def") + "  ", "", "svc_other", "", 1},
		{"Basic " + enc("svc%5Fabc:svc_cs_%2B%2F%3A"), "", "", "", 0},
		{"Basic " + enc("id-without-colon"), "", "", "", 0},
		{"Basic " + enc(":"), "", "", "", 0},
		{"Basic " + enc("a:b:c"), "", "", "", 0},
		{"Basic " + enc("%zz:x"), "", "", "", 0},
		{"Basic " + enc("%FF:x"), "", "", "", 0},
		{"Basic " + enc("a\x00b:c"), "", "", "", 0},
		{"Basic not-base64!", "", "", "", 0},
		{"Basic " + base64.RawStdEncoding.EncodeToString([]byte("a:bc")), "", "", "", 0},
		{"Basic " + base64.URLEncoding.EncodeToString([]byte("\xfb\xff:?>")), "", "", "", 0},
		{"Basic", "", "", "", 0},
		{"Basic ", "", "", "", 0},
		{"Bearer svc_at_x", "", "", "", 0},
		{"Digest username=a", "", "", "", 0},
		{"Basic " + enc("a:b"), "Basic " + enc("a:b"), "", "", 0},
		{"Basic " + enc("a:b"), "", "", "svc_cs_x", 2},
		{"", "", "svc_abc", "svc_cs_def", 3},
		{"", "", "svc_abc", "", 1},
		{"", "", "", "svc_cs_def", 2},
		{"", "", "", "", 0},
		{"", "", "caf\xc3\xa9 +", "\xff\xfe", 0},
	} {
		f.Add(s.auth, s.auth2, s.id, s.secret, s.form)
	}
	f.Fuzz(func(t *testing.T, auth, auth2, id, secret string, form uint8) {
		params := url.Values{}
		if form&1 != 0 {
			params.Set("client_id", id)
		}
		if form&2 != 0 {
			params.Set("client_secret", secret)
		}
		var headers []string
		if auth != "" || auth2 != "" {
			headers = append(headers, auth)
		}
		if auth2 != "" {
			headers = append(headers, auth2)
		}
		creds, err := parseCredentials(headers, params)
		switch {
		case err != nil:
			checkCredentialError(t, err)
		case len(headers) == 0:
			if creds.Basic || creds.Present != (form&3 != 0) || creds.ID != params.Get("client_id") || creds.Secret != params.Get("client_secret") {
				t.Fatalf("form credentials %+v from %v", creds, params)
			}
		default:
			if len(headers) != 1 || !creds.Basic || !creds.Present || params.Has("client_secret") || (params.Has("client_id") && params.Get("client_id") != creds.ID) {
				t.Fatalf("Basic credentials %+v accepted from %q with body %v", creds, headers, params)
			}
			if !utf8.ValidString(creds.ID) || !utf8.ValidString(creds.Secret) {
				t.Fatalf("Basic credentials %+v are not UTF-8", creds)
			}
			again, err := parseCredentials([]string{"Basic " + enc(url.QueryEscape(creds.ID)+":"+url.QueryEscape(creds.Secret))}, nil)
			if err != nil || again != creds {
				t.Fatalf("re-encoded %+v reads back as %+v, %v", creds, again, err)
			}
		}

		// Round trip: id and secret as a conforming client encodes them.
		header := "Basic " + enc(url.QueryEscape(id)+":"+url.QueryEscape(secret))
		creds, err = parseCredentials([]string{header}, nil)
		if utf8.ValidString(id) && utf8.ValidString(secret) {
			if err != nil || creds != (credentials{ID: id, Secret: secret, Basic: true, Present: true}) {
				t.Fatalf("%q:%q encoded per RFC 6749 2.3.1 reads back as %+v, %v", id, secret, creds, err)
			}
		} else {
			var oe *oauthError
			if !errors.As(err, &oe) || oe.Code != "invalid_request" {
				t.Fatalf("non-UTF-8 %q:%q read as %+v, %v; want invalid_request", id, secret, creds, err)
			}
		}
	})
}

// checkCredentialError: only the two documented refusals, never anything a
// 500 would come of.
func checkCredentialError(t *testing.T, err error) {
	t.Helper()
	var oe *oauthError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v is not an OAuth error", err)
	}
	switch {
	case oe.Status == http.StatusBadRequest && oe.Code == "invalid_request":
	case oe.Status == http.StatusUnauthorized && oe.Code == "invalid_client":
	default:
		t.Fatalf("credential error %d %s, want 400 invalid_request or 401 invalid_client", oe.Status, oe.Code)
	}
}
