package partnerclient

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// dpopServer is a token endpoint and an API of the test's own that verify
// every DPoP proof by hand (signature with the header's jwk, typ, alg,
// htm, htu, iat, jti single use, ath, nonce) and refuse what fails with
// the RFC 9449 errors. nonce, when set, is the nonce both require
// (sections 8 and 9: one per deployment, as the servers share it);
// moveTokenNonce and moveAPINonce make the token endpoint or the API ask
// for a new nonce on every request.
type dpopServer struct {
	t   *testing.T
	srv *httptest.Server
	now time.Time

	mu             sync.Mutex
	nonce          string
	moveTokenNonce bool
	moveAPINonce   bool
	tokenType      string
	jtis           map[string]bool
	jkt            string          // of the last token issued
	tokens         map[string]bool // issued, DPoP-bound
	log            []string        // one line per request: path, status, error
}

func newDPoPServer(t *testing.T) *dpopServer {
	d := &dpopServer{t: t, now: time.Unix(1_900_000_000, 0), jtis: map[string]bool{}, tokens: map[string]bool{}, tokenType: "DPoP"}
	d.srv = httptest.NewServer(http.HandlerFunc(d.serve))
	t.Cleanup(d.srv.Close)
	return d
}

func (d *dpopServer) record(path string, status int, code string) {
	d.log = append(d.log, fmt.Sprintf("%s %d %s", path, status, code))
}

func (d *dpopServer) requests() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.log...)
}

func (d *dpopServer) serve(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	uri := d.srv.URL + r.URL.Path // htu: the URI without query
	if r.URL.Path == DefaultTokenPath {
		if d.moveTokenNonce {
			d.nonce = fmt.Sprintf("token-nonce-%d", len(d.log))
		}
		claims, jkt, code := d.verify(r, uri, "", d.nonce)
		switch {
		case code == ErrorUseDPoPNonce:
			w.Header().Set("DPoP-Nonce", d.nonce)
			fallthrough
		case code != "":
			d.record(r.URL.Path, 400, code)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":%q}`, code)
			return
		}
		_ = claims
		d.jkt = jkt
		tok := fmt.Sprintf("svc_at_%d", len(d.tokens)+1)
		d.tokens[tok] = true
		d.record(r.URL.Path, 200, "")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":%q,"expires_in":3600}`, tok, d.tokenType)
		return
	}
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "DPoP ")
	if !ok || !d.tokens[tok] {
		d.record(r.URL.Path, 401, "invalid_token")
		w.Header().Set("WWW-Authenticate", `DPoP error="invalid_token", algs="ES256 ES384 RS256 PS256 EdDSA"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if d.moveAPINonce {
		d.nonce = fmt.Sprintf("api-nonce-%d", len(d.log))
	}
	claims, jkt, code := d.verify(r, uri, tok, d.nonce)
	if code == "" && jkt != d.jkt {
		code = ErrorInvalidDPoPProof
	}
	if code == ErrorUseDPoPNonce {
		w.Header().Set("DPoP-Nonce", d.nonce)
	}
	if code != "" {
		d.record(r.URL.Path, 401, code)
		w.Header().Set("WWW-Authenticate", `DPoP error="`+code+`", algs="ES256 ES384 RS256 PS256 EdDSA"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	d.record(r.URL.Path, 200, "")
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"htm":%q,"body":%q,"jti":%q}`, claims["htm"], body, claims["jti"])
}

// verify checks the request's DPoP proof (RFC 9449 section 4.3) and returns
// its claims and key thumbprint, or the error code to answer.
func (d *dpopServer) verify(r *http.Request, uri, token, nonce string) (map[string]any, string, string) {
	t := d.t
	vals := r.Header.Values("DPoP")
	if len(vals) != 1 {
		t.Errorf("%s: %d DPoP headers", r.URL.Path, len(vals))
		return nil, "", ErrorInvalidDPoPProof
	}
	parts := strings.Split(vals[0], ".")
	if len(parts) != 3 {
		t.Errorf("%s: proof of %d parts", r.URL.Path, len(parts))
		return nil, "", ErrorInvalidDPoPProof
	}
	hb, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var h struct {
		Typ string          `json:"typ"`
		Alg string          `json:"alg"`
		JWK json.RawMessage `json:"jwk"`
	}
	if err := json.Unmarshal(hb, &h); err != nil || h.Typ != "dpop+jwt" {
		t.Errorf("%s: header %s", r.URL.Path, hb)
		return nil, "", ErrorInvalidDPoPProof
	}
	pub, jkt := jwkPublic(t, h.JWK)
	_, claims := verifiedJWS(t, vals[0], pub, h.Alg)
	jti, _ := claims["jti"].(string)
	iat, _ := claims["iat"].(float64)
	switch {
	case claims["htm"] != r.Method:
		t.Errorf("%s: htm %v, want %s", r.URL.Path, claims["htm"], r.Method)
	case claims["htu"] != uri:
		t.Errorf("%s: htu %v, want %s", r.URL.Path, claims["htu"], uri)
	case int64(iat) != d.now.Unix():
		t.Errorf("%s: iat %v, want %d", r.URL.Path, claims["iat"], d.now.Unix())
	case len(jti) != 22 || d.jtis[jti]:
		t.Errorf("%s: jti %q: not 128 random bits, or used before", r.URL.Path, jti)
	default:
		d.jtis[jti] = true
		ath, hasATH := claims["ath"]
		if token == "" && hasATH {
			t.Errorf("%s: ath in a token request", r.URL.Path)
		}
		if token != "" {
			sum := sha256.Sum256([]byte(token))
			if ath != base64.RawURLEncoding.EncodeToString(sum[:]) {
				t.Errorf("%s: ath %v is not the token's hash", r.URL.Path, ath)
				return nil, "", ErrorInvalidDPoPProof
			}
		}
		if got, _ := claims["nonce"].(string); nonce != "" && got != nonce {
			return nil, "", ErrorUseDPoPNonce
		}
		return claims, jkt, ""
	}
	return nil, "", ErrorInvalidDPoPProof
}

// jwkPublic reads a public jwk by hand and returns the key and its RFC 7638
// thumbprint, computed from the members in their canonical order.
func jwkPublic(t *testing.T, raw json.RawMessage) (crypto.PublicKey, string) {
	t.Helper()
	var j map[string]string
	if err := json.Unmarshal(raw, &j); err != nil {
		t.Fatalf("jwk %s: %v", raw, err)
	}
	dec := func(name string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(j[name])
		if err != nil || len(b) == 0 {
			t.Fatalf("jwk %s: member %s", raw, name)
		}
		return b
	}
	var pub crypto.PublicKey
	var canon string
	switch j["kty"] {
	case "EC":
		curve := map[string]ecdh.Curve{"P-256": ecdh.P256(), "P-384": ecdh.P384()}[j["crv"]]
		if curve == nil || len(j) != 4 {
			t.Fatalf("jwk %s", raw)
		}
		k, err := curve.NewPublicKey(append(append([]byte{4}, dec("x")...), dec("y")...))
		if err != nil {
			t.Fatalf("jwk %s: %v", raw, err)
		}
		der, _ := x509.MarshalPKIXPublicKey(k)
		pub, _ = x509.ParsePKIXPublicKey(der)
		canon = fmt.Sprintf(`{"crv":%q,"kty":"EC","x":%q,"y":%q}`, j["crv"], j["x"], j["y"])
	case "RSA":
		if len(j) != 3 {
			t.Fatalf("jwk %s", raw)
		}
		pub = &rsa.PublicKey{N: new(big.Int).SetBytes(dec("n")), E: int(new(big.Int).SetBytes(dec("e")).Int64())}
		canon = fmt.Sprintf(`{"e":%q,"kty":"RSA","n":%q}`, j["e"], j["n"])
	case "OKP":
		if j["crv"] != "Ed25519" || len(j) != 3 {
			t.Fatalf("jwk %s", raw)
		}
		pub = ed25519.PublicKey(dec("x"))
		canon = fmt.Sprintf(`{"crv":"Ed25519","kty":"OKP","x":%q}`, j["x"])
	default:
		t.Fatalf("jwk %s", raw)
	}
	sum := sha256.Sum256([]byte(canon))
	return pub, base64.RawURLEncoding.EncodeToString(sum[:])
}

func (d *dpopServer) config(key crypto.Signer, alg string) Config {
	return Config{BaseURL: d.srv.URL, ClientID: "svc_client", ClientSecret: "svc_cs_secret", DPoPKey: key, DPoPAlgorithm: alg,
		Now: func() time.Time { return d.now }}
}

func TestDPoPEachAlgorithm(t *testing.T) {
	for _, alg := range []string{ES256, ES384, RS256, PS256, EdDSA} {
		t.Run(alg, func(t *testing.T) {
			d := newDPoPServer(t)
			key := testKeys()[alg]
			c, err := New(d.config(key, alg))
			if err != nil {
				t.Fatal(err)
			}
			tok, err := c.TokenSource().TokenContext(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tok.TokenType != "DPoP" || tok.Type() != "DPoP" {
				t.Fatalf("token type %q", tok.TokenType)
			}
			want, err := DPoPThumbprint(key.Public())
			if err != nil || c.TokenSource().DPoPThumbprint() != want || d.jkt != want {
				t.Fatalf("thumbprints: source %q, DPoPThumbprint %q (%v), server %q", c.TokenSource().DPoPThumbprint(), want, err, d.jkt)
			}
			// A GET with a query and a POST with a body, each with its own proof.
			for _, req := range []*http.Request{
				mustRequest(t, http.MethodGet, d.srv.URL+"/api/v1/me/?page=2#top", ""),
				mustRequest(t, http.MethodPost, d.srv.URL+"/api/v1/referrals/", `{"a":1}`),
			} {
				resp, err := c.HTTPClient().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"htm":"`+req.Method+`"`) {
					t.Fatalf("%s: %d %s", req.Method, resp.StatusCode, body)
				}
			}
			if got := strings.Join(d.requests(), ", "); got != "/api/v1/oauth/token/ 200 , /api/v1/me/ 200 , /api/v1/referrals/ 200 " {
				t.Fatalf("requests: %s", got)
			}
		})
	}
}

func mustRequest(t *testing.T, method, url, body string) *http.Request {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestDPoPNonces: the server asks for its nonce (use_dpop_nonce), the
// client retries once with it and sends the latest nonce of the origin from
// then on; when the nonce changes, the API asks again.
func TestDPoPNonces(t *testing.T) {
	d := newDPoPServer(t)
	d.nonce = "nonce-1"
	c, err := New(d.config(testKeys()[ES256], ""))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if i == 1 {
			d.mu.Lock()
			d.nonce = "nonce-2" // a rotation
			d.mu.Unlock()
		}
		resp, err := c.HTTPClient().Do(mustRequest(t, http.MethodPost, d.srv.URL+"/api/v1/referrals/", `{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"body":"{\"n\":1}"`) {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	// A new token: the token endpoint's nonce is remembered.
	c.TokenSource().Invalidate("svc_at_1")
	if _, err := c.TokenSource().Token(); err != nil {
		t.Fatal(err)
	}
	want := "/api/v1/oauth/token/ 400 use_dpop_nonce, /api/v1/oauth/token/ 200 , /api/v1/referrals/ 200 , " +
		"/api/v1/referrals/ 401 use_dpop_nonce, /api/v1/referrals/ 200 , /api/v1/referrals/ 200 , /api/v1/oauth/token/ 200 "
	if got := strings.Join(d.requests(), ", "); got != want {
		t.Fatalf("requests:\n%s\nwant\n%s", got, want)
	}
}

// TestDPoPNonceRetriedOnce: a server that asks for a new nonce every time
// gets one retry per request for it, not a loop.
func TestDPoPNonceRetriedOnce(t *testing.T) {
	d := newDPoPServer(t)
	d.moveAPINonce = true
	var logs bytes.Buffer
	cfg := d.config(testKeys()[EdDSA], "")
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Me(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Me: %v, want a 401 *APIError", err)
	}
	// The nonce retry, then the retry with a fresh token: both answered
	// use_dpop_nonce again.
	want := "/api/v1/oauth/token/ 200 , /api/v1/me/ 401 use_dpop_nonce, /api/v1/me/ 401 use_dpop_nonce, " +
		"/api/v1/oauth/token/ 200 , /api/v1/me/ 401 use_dpop_nonce"
	if got := strings.Join(d.requests(), ", "); got != want {
		t.Fatalf("requests:\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(logs.String(), "use_dpop_nonce, retrying once with the server's nonce") {
		t.Fatalf("no log of the nonce retry:\n%s", logs.String())
	}

	// The token endpoint likewise: one retry, then its error.
	d2 := newDPoPServer(t)
	d2.moveTokenNonce = true
	ts, err := NewTokenSource(d2.config(testKeys()[EdDSA], ""))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ts.Token()
	var te *TokenError
	if !errors.As(err, &te) || te.Code != ErrorUseDPoPNonce || te.StatusCode != http.StatusBadRequest {
		t.Fatalf("Token: %v", err)
	}
	if got := strings.Join(d2.requests(), ", "); got != "/api/v1/oauth/token/ 400 use_dpop_nonce, /api/v1/oauth/token/ 400 use_dpop_nonce" {
		t.Fatalf("requests: %s", got)
	}

	// Without a DPoP-Nonce header there is nothing to retry with.
	rec := newRecorder(t)
	rec.answer(DefaultTokenPath, answer{status: http.StatusBadRequest, body: `{"error":"use_dpop_nonce","error_description":"nonce required"}`})
	ts, err = NewTokenSource(Config{BaseURL: rec.srv.URL, ClientID: "svc_client", ClientSecret: "s", DPoPKey: testKeys()[EdDSA]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = ts.Token(); !errors.As(err, &te) || te.Code != ErrorUseDPoPNonce {
		t.Fatalf("Token: %v", err)
	}
	if n := len(rec.requests()); n != 1 {
		t.Fatalf("%d token requests without a DPoP-Nonce header, want 1", n)
	}
}

// TestDPoPBearerAnswer: a server that does not bind the token (token_type
// Bearer, RFC 9449 section 5) gets it back as Bearer, without proofs.
func TestDPoPBearerAnswer(t *testing.T) {
	rec := newRecorder(t)
	c, err := New(Config{BaseURL: rec.srv.URL, ClientID: "svc_client", ClientSecret: "s", DPoPKey: testKeys()[ES256]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Me(context.Background()); err == nil {
		t.Log("the recorder answered the API call") // any answer: the request is what counts
	}
	reqs := rec.requests()
	if len(reqs) != 2 || reqs[1].authorization != "Bearer svc_at_1" {
		t.Fatalf("requests %+v, want the token then the API call with Bearer svc_at_1", reqs)
	}

	// Another token_type is refused.
	rec.answer(DefaultTokenPath, answer{status: http.StatusOK, body: `{"access_token":"x","token_type":"MAC","expires_in":60}`})
	ts, _ := NewTokenSource(Config{BaseURL: rec.srv.URL, ClientID: "svc_client", ClientSecret: "s", DPoPKey: testKeys()[ES256]})
	if _, err := ts.Token(); err == nil || err.Error() != `partnerclient: token request failed: 200: token_type "MAC", want DPoP or Bearer` {
		t.Fatalf("Token: %v", err)
	}
	// Without DPoPKey, a DPoP token cannot be used.
	rec.answer(DefaultTokenPath, answer{status: http.StatusOK, body: `{"access_token":"x","token_type":"DPoP","expires_in":60}`})
	ts, _ = NewTokenSource(Config{BaseURL: rec.srv.URL, ClientID: "svc_client", ClientSecret: "s"})
	if _, err := ts.Token(); err == nil || err.Error() != `partnerclient: token request failed: 200: token_type "DPoP", want Bearer` {
		t.Fatalf("Token: %v", err)
	}
}

// TestDPoPThumbprint checks the thumbprint against RFC 9449's example key
// (figures 2 and 4), whose cnf.jkt section 6.1 gives.
func TestDPoPThumbprint(t *testing.T) {
	coord := func(s string) []byte {
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	k, err := ecdh.P256().NewPublicKey(append(append([]byte{4}, coord("l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs")...),
		coord("9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA")...))
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKIXPublicKey(k)
	pub, _ := x509.ParsePKIXPublicKey(der)
	if got, err := DPoPThumbprint(pub); err != nil || got != "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I" {
		t.Fatalf("DPoPThumbprint = %q, %v", got, err)
	}
	for _, alg := range []string{ES384, RS256, EdDSA} {
		pub := testKeys()[alg].Public()
		jwk, _ := publicJWK(pub)
		_, want := jwkPublic(t, jwk)
		if got, err := DPoPThumbprint(pub); err != nil || got != want {
			t.Errorf("%s: DPoPThumbprint = %q, %v; want %q", alg, got, err, want)
		}
	}
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	if _, err := DPoPThumbprint(p521.Public()); err == nil || err.Error() != "partnerclient: unsupported DPoP curve P-521" {
		t.Fatalf("P-521: %v", err)
	}
}

func TestDPoPConfigValidate(t *testing.T) {
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	for _, tc := range []struct {
		key  crypto.Signer
		alg  string
		want string
	}{
		{testKeys()[RS256], RS384, `partnerclient: DPoP algorithm "RS384" is not supported (ES256, ES384, RS256, PS256, EdDSA or Ed25519)`},
		{testKeys()[ES256], ES384, `partnerclient: DPoP key: algorithm "ES384" does not fit an ECDSA key on P-256 (ES256: P-256, ES384: P-384)`},
		{testKeys()[EdDSA], RS256, `partnerclient: DPoP key: algorithm "RS256" does not fit an Ed25519 key (EdDSA or Ed25519)`},
		{p521, "", `partnerclient: DPoP key: unsupported key type or curve (ECDSA P-256 or P-384, RSA, Ed25519)`},
		{p521, ES256, `partnerclient: DPoP key: algorithm "ES256" does not fit an ECDSA key on P-521 (ES256: P-256, ES384: P-384)`},
		{nil, ES256, `partnerclient: DPoPAlgorithm needs DPoPKey`},
	} {
		_, err := NewTokenSource(Config{BaseURL: "https://api.example.com", ClientID: "svc_client", ClientSecret: "s", DPoPKey: tc.key, DPoPAlgorithm: tc.alg})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%T %q: %v, want %s", tc.key, tc.alg, err, tc.want)
		}
	}
}

// TestDPoPNoKeyInOutput: neither the DPoP key nor a proof shows in a
// Config's or TokenSource's output, an error or a log.
func TestDPoPNoKeyInOutput(t *testing.T) {
	d := newDPoPServer(t)
	d.moveTokenNonce = true
	key := testKeys()[EdDSA].(ed25519.PrivateKey)
	var logs bytes.Buffer
	cfg := d.config(key, "")
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ts, err := NewTokenSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, tokErr := ts.Token()
	var out strings.Builder
	for _, v := range []any{cfg, &cfg, ts} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
	}
	fmt.Fprintln(&out, tokErr)
	out.WriteString(logs.String())
	for _, secret := range []string{base64.RawURLEncoding.EncodeToString(key.Seed()), base64.StdEncoding.EncodeToString(key.Seed()), fmt.Sprint(key.Seed()), fmt.Sprintf("%x", key.Seed())} {
		if strings.Contains(out.String(), secret) {
			t.Fatalf("the DPoP key shows in the output:\n%s", out.String())
		}
	}
	if strings.Contains(out.String(), "dpop+jwt") || strings.Contains(out.String(), "eyJ0eXAiOiJkcG9wK2p3dCI") {
		t.Fatalf("a proof shows in the output:\n%s", out.String())
	}
}

func TestAuthParam(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{`error="use_dpop_nonce"`, "use_dpop_nonce"},
		{`algs="ES256 EdDSA", error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof"`, "use_dpop_nonce"},
		{`error_description="a \"quoted\" error=x", ERROR=use_dpop_nonce`, "use_dpop_nonce"},
		{`error="invalid_dpop_proof"`, "invalid_dpop_proof"},
		{`realm="api"`, ""},
		{`error`, ""},
		{``, ""},
	} {
		if got := authParam(tc.params, "error"); got != tc.want {
			t.Errorf("authParam(%q) = %q, want %q", tc.params, got, tc.want)
		}
	}
	for _, tc := range []struct {
		status int
		header []string
		want   bool
	}{
		{401, []string{`DPoP error="use_dpop_nonce"`}, true},
		{401, []string{`Bearer realm="api"`, `dpop algs="ES256", error="use_dpop_nonce"`}, true},
		{401, []string{`Bearer error="use_dpop_nonce"`}, false},
		{401, []string{`DPoP error="invalid_dpop_proof"`}, false},
		{400, []string{`DPoP error="use_dpop_nonce"`}, false},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{"Www-Authenticate": tc.header}}
		if got := nonceChallenge(resp); got != tc.want {
			t.Errorf("nonceChallenge(%d %q) = %v", tc.status, tc.header, got)
		}
	}
}

// TestDPoPConcurrent: goroutines sharing one client each get a proof of
// their own per request (the server refuses a jti seen before), while the
// nonce is learnt once.
func TestDPoPConcurrent(t *testing.T) {
	d := newDPoPServer(t)
	d.nonce = "nonce-1"
	c, err := New(d.config(testKeys()[ES256], ""))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				if _, err := c.Me(context.Background()); err != nil {
					t.Errorf("Me: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	oks := 0
	for _, r := range d.requests() {
		if r == "/api/v1/me/ 200 " {
			oks++
		}
	}
	if oks != 40 {
		t.Fatalf("%d API requests answered 200, want 40: %v", oks, d.requests())
	}
}
