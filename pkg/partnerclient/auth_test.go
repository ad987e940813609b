package partnerclient

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorded is one request the recorder received.
type recorded struct {
	path          string
	authorization string
	contentType   string
	form          url.Values
}

// recorder is an OAuth server of the test's own: it records every request
// and answers the token and revocation endpoints with the next of its
// canned answers for the path (the last one repeats), or 200 with a fresh
// token. It checks nothing itself: the SDK's tests against the real token
// service live in deploy/e2e/sdk.
type recorder struct {
	srv *httptest.Server

	mu      sync.Mutex
	reqs    []recorded
	answers map[string][]answer
	n       int
}

type answer struct {
	status     int
	retryAfter string
	body       string
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{answers: map[string][]answer{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		form, _ := url.ParseQuery(string(body))
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{req.URL.Path, req.Header.Get("Authorization"), req.Header.Get("Content-Type"), form})
		a := answer{status: http.StatusOK}
		if q := r.answers[req.URL.Path]; len(q) > 0 {
			a = q[0]
			if len(q) > 1 {
				r.answers[req.URL.Path] = q[1:]
			}
		}
		r.n++
		n := r.n
		r.mu.Unlock()
		if a.retryAfter != "" {
			w.Header().Set("Retry-After", a.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		if a.body == "" && a.status == http.StatusOK && req.URL.Path == DefaultTokenPath {
			a.body = fmt.Sprintf(`{"access_token":"svc_at_%d","token_type":"Bearer","expires_in":3600,"scope":"a b"}`, n)
		}
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) answer(path string, as ...answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[path] = as
}

func (r *recorder) requests() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// sleeps records the waits of the retries instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return nil
}

// checkAssertionForm checks a private_key_jwt request's form: exactly the
// fields of RFC 7523 section 2.2 (and want's), a client assertion that
// verifies with pub, with aud, and returns the assertion's jti.
func checkAssertionForm(t *testing.T, r recorded, pub crypto.PublicKey, alg, aud string, want url.Values) string {
	t.Helper()
	if r.authorization != "" {
		t.Errorf("%s: Authorization %q sent with private_key_jwt", r.path, r.authorization)
	}
	if r.contentType != "application/x-www-form-urlencoded" {
		t.Errorf("%s: Content-Type %q", r.path, r.contentType)
	}
	a := r.form.Get("client_assertion")
	got := url.Values{}
	for k, v := range r.form {
		got[k] = v
	}
	delete(got, "client_assertion")
	want = maps(want, url.Values{"client_id": {"svc_client"}, "client_assertion_type": {ClientAssertionType}})
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: form %v (without client_assertion), want %v", r.path, got, want)
	}
	header, claims := verifiedJWS(t, a, pub, alg)
	if header["kid"] != "key-2030" || header["typ"] != "JWT" {
		t.Errorf("%s: header %v", r.path, header)
	}
	if claims["iss"] != "svc_client" || claims["sub"] != "svc_client" || claims["aud"] != aud {
		t.Errorf("%s: claims %v, want iss = sub = svc_client, aud %q", r.path, claims, aud)
	}
	exp, _ := claims["exp"].(float64)
	iat, _ := claims["iat"].(float64)
	if exp-iat != 60 {
		t.Errorf("%s: exp - iat = %v, want 60", r.path, exp-iat)
	}
	jti, _ := claims["jti"].(string)
	return jti
}

func maps(a, b url.Values) url.Values {
	out := url.Values{}
	for _, m := range []url.Values{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestPrivateKeyJWTTokenRequest(t *testing.T) {
	for _, alg := range []string{ES256, ES384, RS256, RS384, PS256, EdDSA} {
		t.Run(alg, func(t *testing.T) {
			rec := newRecorder(t)
			sl := &sleeps{}
			key := testKeys()[alg]
			ts, err := NewTokenSource(Config{
				BaseURL: rec.srv.URL, ClientID: "svc_client", PrivateKey: key, KeyID: "key-2030", Algorithm: alg,
				Scopes: []string{"patients.read", "referrals.write"}, Sleep: sl.sleep,
			})
			if err != nil {
				t.Fatal(err)
			}
			// A 503 first: the retry must carry a new assertion, not the same one.
			rec.answer(DefaultTokenPath, answer{status: http.StatusServiceUnavailable, body: `{"error":"temporarily_unavailable"}`}, answer{status: http.StatusOK})
			tok, err := ts.TokenContext(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ts.Invalidate(tok.AccessToken)
			if _, err := ts.TokenContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			reqs := rec.requests()
			if len(reqs) != 3 || len(sl.d) != 1 {
				t.Fatalf("%d requests, %d retries, want 3 and 1", len(reqs), len(sl.d))
			}
			jtis := map[string]bool{}
			for _, r := range reqs {
				jti := checkAssertionForm(t, r, key.Public(), alg, rec.srv.URL+DefaultTokenPath,
					url.Values{"grant_type": {"client_credentials"}, "scope": {"patients.read referrals.write"}})
				if jtis[jti] {
					t.Errorf("jti %q sent twice", jti)
				}
				jtis[jti] = true
			}
		})
	}
}

func TestAssertionAudience(t *testing.T) {
	rec := newRecorder(t)
	key := testKeys()[ES256]
	ts, err := NewTokenSource(Config{BaseURL: rec.srv.URL, ClientID: "svc_client", PrivateKey: key, KeyID: "key-2030",
		AssertionAudience: "https://auth.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Token(); err != nil {
		t.Fatal(err)
	}
	// No scope: the field is absent; Algorithm defaulted from the key.
	checkAssertionForm(t, rec.requests()[0], key.Public(), ES256, "https://auth.example.com", url.Values{"grant_type": {"client_credentials"}})
}

func TestRevoke(t *testing.T) {
	key := testKeys()[EdDSA]
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"client_secret_basic", Config{ClientID: "svc_client", ClientSecret: "svc_cs_s3cr3t/+"}},
		{"client_secret_post", Config{ClientID: "svc_client", ClientSecret: "svc_cs_s3cr3t/+", AuthStyle: AuthForm}},
		{"private_key_jwt", Config{ClientID: "svc_client", PrivateKey: key, KeyID: "key-2030"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := newRecorder(t)
			cfg := c.cfg
			cfg.BaseURL = rec.srv.URL
			ts, err := NewTokenSource(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := ts.RevokeCached(context.Background()); err != nil || len(rec.requests()) != 0 {
				t.Fatalf("RevokeCached with no token: %v after %d requests, want nil after none", err, len(rec.requests()))
			}
			tok, err := ts.TokenContext(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if err := ts.RevokeCached(context.Background()); err != nil {
				t.Fatal(err)
			}
			next, err := ts.TokenContext(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if next.AccessToken == tok.AccessToken {
				t.Error("the revoked token is still cached")
			}
			reqs := rec.requests()
			if len(reqs) != 3 || reqs[1].path != DefaultRevocationPath {
				t.Fatalf("requests %v, want token, revocation, token", reqs)
			}
			rv := reqs[1]
			want := url.Values{"token": {tok.AccessToken}, "token_type_hint": {"access_token"}}
			switch ts.cfg.AuthStyle {
			case AuthBasic:
				basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("svc_client:svc_cs_s3cr3t%2F%2B"))
				if rv.authorization != basic || !reflect.DeepEqual(rv.form, want) {
					t.Errorf("revocation: Authorization %q form %v, want %q %v", rv.authorization, rv.form, basic, want)
				}
			case AuthForm:
				want = maps(want, url.Values{"client_id": {"svc_client"}, "client_secret": {"svc_cs_s3cr3t/+"}})
				if rv.authorization != "" || !reflect.DeepEqual(rv.form, want) {
					t.Errorf("revocation: Authorization %q form %v, want none %v", rv.authorization, rv.form, want)
				}
			default:
				// The same audience as at the token endpoint: the server
				// accepts its token endpoint URL (or its issuer).
				jti := checkAssertionForm(t, rv, key.Public(), EdDSA, rec.srv.URL+DefaultTokenPath, want)
				if jti0 := checkAssertionForm(t, reqs[0], key.Public(), EdDSA, rec.srv.URL+DefaultTokenPath,
					url.Values{"grant_type": {"client_credentials"}}); jti0 == jti {
					t.Error("the revocation request reused the token request's assertion")
				}
			}
			if rv.contentType != "application/x-www-form-urlencoded" {
				t.Errorf("Content-Type %q", rv.contentType)
			}
		})
	}
}

func TestRevokeErrors(t *testing.T) {
	rec := newRecorder(t)
	sl := &sleeps{}
	var logs bytes.Buffer
	ts, err := NewTokenSource(Config{BaseURL: rec.srv.URL, ClientID: "svc_client", ClientSecret: "svc_cs_s3cr3t", Sleep: sl.sleep,
		MaxWait: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const token = "svc_at_not-a-real-one"

	// RFC 7009 section 2.2.1: an OAuth error answer is a *TokenError.
	rec.answer(DefaultRevocationPath, answer{status: http.StatusBadRequest, body: `{"error":"unsupported_token_type","error_description":"Only access tokens are revocable"}`})
	err = ts.Revoke(ctx, token)
	var te *TokenError
	if !errors.As(err, &te) || te.StatusCode != 400 || te.Code != "unsupported_token_type" || te.Description != "Only access tokens are revocable" {
		t.Fatalf("error %#v", err)
	}
	if want := "partnerclient: revocation request failed: 400 unsupported_token_type: Only access tokens are revocable"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}

	// 401 invalid_client: not retried.
	rec.answer(DefaultRevocationPath, answer{status: http.StatusUnauthorized, body: `{"error":"invalid_client","error_description":"Client authentication failed"}`})
	n := len(rec.requests())
	if err := ts.Revoke(ctx, token); !errors.As(err, &te) || te.Code != "invalid_client" || len(rec.requests()) != n+1 {
		t.Errorf("401: %v after %d requests", err, len(rec.requests())-n)
	}

	// 503 with Retry-After, then 429 without, then 200: retried.
	sl.d = nil
	rec.answer(DefaultRevocationPath,
		answer{status: http.StatusServiceUnavailable, retryAfter: "2", body: `{"error":"temporarily_unavailable"}`},
		answer{status: http.StatusTooManyRequests, body: `{"error":"slow_down"}`},
		answer{status: http.StatusOK, body: `{"unexpected":"bodies are ignored"}`})
	if err := ts.Revoke(ctx, token); err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{2 * time.Second, DefaultBaseDelay}; !slices.Equal(sl.d, want) {
		t.Errorf("waits %v, want %v", sl.d, want)
	}

	// A Retry-After longer than MaxWait: returned at once.
	sl.d = nil
	rec.answer(DefaultRevocationPath, answer{status: http.StatusTooManyRequests, retryAfter: "60", body: `{"error":"slow_down"}`})
	if err := ts.Revoke(ctx, token); !errors.As(err, &te) || te.StatusCode != 429 || te.RetryAfter != time.Minute || len(sl.d) != 0 {
		t.Errorf("429 Retry-After 60: %v, waits %v", err, sl.d)
	}

	if err := ts.Revoke(ctx, ""); !errors.As(err, &te) {
		t.Errorf("empty token: %v", err)
	}
	if l := logs.String(); strings.Contains(l, token) || strings.Contains(l, "s3cr3t") || !strings.Contains(l, "retrying revocation request") {
		t.Errorf("logs hold the token or secret, or no retry:\n%s", l)
	}
}

func TestRevocationURL(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{BaseURL: "https://api.example.com"}, "https://api.example.com/api/v1/oauth/revoke/"},
		{Config{BaseURL: "https://api.example.com/", TokenURL: "https://auth.example.com/t"}, "https://api.example.com/api/v1/oauth/revoke/"},
		{Config{TokenURL: "https://auth.example.com/api/v1/oauth/token/"}, "https://auth.example.com/api/v1/oauth/revoke/"},
		{Config{BaseURL: "https://api.example.com", RevocationURL: "https://auth.example.com/revoke"}, "https://auth.example.com/revoke"},
		{Config{TokenURL: "https://auth.example.com/token"}, ""},
	} {
		cfg := c.cfg
		cfg.ClientID, cfg.ClientSecret = "svc_client", "s"
		ts, err := NewTokenSource(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if ts.cfg.RevocationURL != c.want {
			t.Errorf("%v: revocation URL %q, want %q", c.cfg, ts.cfg.RevocationURL, c.want)
		}
		if c.want == "" {
			if err := ts.Revoke(context.Background(), "svc_at_x"); err == nil || !strings.Contains(err.Error(), "RevocationURL") {
				t.Errorf("Revoke without a revocation URL: %v", err)
			}
		}
	}
}

func TestPrivateKeyConfigValidate(t *testing.T) {
	key := testKeys()[ES256]
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{PrivateKey: key, KeyID: "k", ClientSecret: "s"}, "not both"},
		{Config{PrivateKey: key, KeyID: "k", AuthStyle: AuthForm}, "AuthForm"},
		{Config{PrivateKey: key}, "KeyID is required"},
		{Config{PrivateKey: key, KeyID: "k", Algorithm: RS256}, "does not fit"},
		{Config{PrivateKey: key, KeyID: "k", Algorithm: "none"}, "does not fit"},
		{Config{AuthStyle: AuthPrivateKeyJWT, KeyID: "k"}, "needs PrivateKey"},
		{Config{ClientSecret: "s", RevocationURL: "/revoke"}, "RevocationURL must be"},
	} {
		cfg := c.cfg
		cfg.BaseURL, cfg.ClientID = "https://x.test", "svc_client"
		if _, err := NewTokenSource(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
}

// TestNoKeyInOutput: neither the private key nor an assertion shows in any
// String, format, log or error.
func TestNoKeyInOutput(t *testing.T) {
	m := privateJWK(t, testKeys()[RS256], map[string]any{"kid": "key-2030"})
	jwk, err := ParsePrivateJWK(jwkBytes(t, m))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	rec.answer(DefaultTokenPath, answer{status: http.StatusUnauthorized, body: `{"error":"invalid_client","error_description":"Client authentication failed"}`})
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := Config{BaseURL: rec.srv.URL, ClientID: "svc_client", PrivateKey: jwk.Key, KeyID: jwk.KeyID, Algorithm: PS256, Logger: logger}
	ts, err := NewTokenSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, tokErr := ts.Token()
	revErr := ts.Revoke(context.Background(), "svc_at_x")
	logger.Info("config", "cfg", cfg)
	var out strings.Builder
	for _, v := range []any{cfg, &cfg, ts, jwk} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
	}
	fmt.Fprintln(&out, tokErr, revErr)
	out.WriteString(logs.String())
	if !strings.Contains(out.String(), "(redacted)") || !strings.Contains(out.String(), "invalid_client") {
		t.Fatalf("unexpected output:\n%s", out.String())
	}
	var secrets []string
	for _, k := range []string{"d", "p", "q", "dp", "dq", "qi"} {
		secrets = append(secrets, m[k].(string))
	}
	for _, r := range rec.requests() {
		secrets = append(secrets, r.form.Get("client_assertion"))
	}
	for _, s := range secrets {
		if s == "" || strings.Contains(out.String(), s) || strings.Contains(out.String(), s[:16]) {
			t.Errorf("a private member or an assertion shows in the output:\n%s", out.String())
		}
	}
	if want := fmt.Sprintf(`partnerclient.Config{BaseURL: %q, TokenURL: %q, ClientID: "svc_client", PrivateKey: (redacted), KeyID: "key-2030", Algorithm: "PS256", Scopes: []}`,
		rec.srv.URL, rec.srv.URL+DefaultTokenPath); cfg.String() != want {
		t.Errorf("String %s, want %s", cfg.String(), want)
	}
}

// failingSigner is a KMS that is down.
type failingSigner struct{ crypto.Signer }

func (failingSigner) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return nil, errors.New("kms: unavailable")
}

func TestSigningFailure(t *testing.T) {
	rec := newRecorder(t)
	sl := &sleeps{}
	ts, err := NewTokenSource(Config{BaseURL: rec.srv.URL, ClientID: "svc_client", PrivateKey: failingSigner{testKeys()[ES256]}, KeyID: "k", Sleep: sl.sleep})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ts.Token()
	var te *TokenError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "signing the client assertion: kms: unavailable") {
		t.Errorf("error %v", err)
	}
	if len(rec.requests()) != 0 || len(sl.d) != 0 {
		t.Errorf("%d requests and %d retries after a signing failure, want none", len(rec.requests()), len(sl.d))
	}
}
