package dpop_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/pkg/dpop"
)

func TestVerifyEachAlgorithm(t *testing.T) {
	for _, alg := range dpop.Algorithms {
		t.Run(alg, func(t *testing.T) {
			k := keyFor(t, alg)
			c := goodClaims()
			c["ath"] = dpop.AccessTokenHash("svc_at_token")
			p, err := dpop.Verify(dpop.Input{Headers: []string{jwxProof(t, k, c)}, Method: testMethod, URI: testURI, AccessToken: "svc_at_token", Now: now})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			pub, err := jwk.ParseKey(k.pub)
			if err != nil {
				t.Fatal(err)
			}
			tp, err := pub.Thumbprint(crypto.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			want := dpop.Proof{JKT: b64(string(tp)), JTI: "3Xm_4e1c2b9a-test", IssuedAt: now, Algorithm: alg}
			if p != want {
				t.Fatalf("proof %+v, want %+v", p, want)
			}
		})
	}
}

func TestVerifyAccepts(t *testing.T) {
	k := keyFor(t, "ES256")
	with := func(mod func(map[string]any)) string {
		c := goodClaims()
		mod(c)
		return jwxProof(t, k, c)
	}
	for _, tc := range []struct {
		name string
		in   dpop.Input
	}{
		{"htu normalized: case, default port, query and fragment ignored",
			dpop.Input{Headers: []string{with(func(c map[string]any) { c["htu"] = "HTTPS://Auth.Example.COM:443/api/v1/oauth/token/?a=1#f" })}, URI: testURI + "?grant_type=x"}},
		{"htu with percent-encoded unreserved characters and dot segments",
			dpop.Input{Headers: []string{with(func(c map[string]any) { c["htu"] = "https://auth.example.com/api/v1/x/../%6fauth/./token/" })}, URI: testURI}},
		{"iat at the edge of the window", dpop.Input{Headers: []string{with(func(c map[string]any) { c["iat"] = now.Add(-dpop.DefaultWindow).Unix() })}, URI: testURI}},
		{"iat at the edge of the leeway", dpop.Input{Headers: []string{with(func(c map[string]any) { c["iat"] = now.Add(dpop.DefaultLeeway).Unix() })}, URI: testURI}},
		{"iat fractional", dpop.Input{Headers: []string{with(func(c map[string]any) { c["iat"] = float64(now.Unix()) + 0.25 })}, URI: testURI}},
		{"a wider window", dpop.Input{Headers: []string{with(func(c map[string]any) { c["iat"] = now.Add(-5 * time.Minute).Unix() })}, URI: testURI, Window: 10 * time.Minute}},
		{"ath ignored without a token (token endpoint)", dpop.Input{Headers: []string{with(func(c map[string]any) { c["ath"] = "whatever" })}, URI: testURI}},
		{"nonce ignored when nonces are off", dpop.Input{Headers: []string{with(func(c map[string]any) { c["nonce"] = "old" })}, URI: testURI}},
		{"nonce accepted", dpop.Input{Headers: []string{with(func(c map[string]any) { c["nonce"] = "n-1" })}, URI: testURI, Nonces: staticNonces("n-1")}},
		{"unknown claims ignored", dpop.Input{Headers: []string{with(func(c map[string]any) { c["extra"] = map[string]any{"x": 1} })}, URI: testURI}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Method, in.Now = testMethod, now
			if _, err := dpop.Verify(in); err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
}

// TestVerifyRefuses runs one case per refusal of Verify, each checked for
// its exact error (kind, code and description).
func TestVerifyRefuses(t *testing.T) {
	es := keyFor(t, "ES256")
	rs := keyFor(t, "RS256")
	ed := keyFor(t, "EdDSA")
	es384 := keyFor(t, "ES384")
	good := mustJSON(t, goodClaims())
	claimsWith := func(mod func(map[string]any)) string {
		c := goodClaims()
		mod(c)
		return mustJSON(t, c)
	}
	sign := func(hdr, claims string) string { return rawProof(t, es.priv, "ES256", hdr, claims) }
	goodHeader := header("ES256", es.pub)
	goodProof := sign(goodHeader, good)

	// Private JWKs: the EC key with its d, a symmetric key.
	privEC, _ := jwk.Import(es.priv)
	privECJSON, _ := json.Marshal(privEC)
	var withP map[string]any
	_ = json.Unmarshal(rs.pub, &withP)
	withP["p"] = "AQAB"
	rsaWithP, _ := json.Marshal(withP)
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	longJTI := claimsWith(func(c map[string]any) { c["jti"] = strings.Repeat("j", dpop.MaxJTILength+1) })

	const (
		invalid = dpop.CodeInvalidProof
		nonce   = dpop.CodeUseNonce
	)
	for _, tc := range []struct {
		name    string
		headers []string
		token   string
		nonces  dpop.NonceChecker
		code    string
		desc    string
	}{
		{"no DPoP header", nil, "", nil, invalid, "a DPoP header is required"},
		{"two DPoP headers", []string{goodProof, goodProof}, "", nil, invalid, "exactly one DPoP header is allowed"},
		{"too long", []string{goodProof + strings.Repeat("A", dpop.MaxProofLength)}, "", nil, invalid, "the DPoP proof is too long"},
		{"two parts", []string{b64(goodHeader) + "." + b64(good)}, "", nil, invalid, "the DPoP proof is not a JWS in compact serialization"},
		{"four parts", []string{goodProof + ".x"}, "", nil, invalid, "the DPoP proof is not a JWS in compact serialization"},
		{"empty signature", []string{b64(goodHeader) + "." + b64(good) + "."}, "", nil, invalid, "the DPoP proof is not a JWS in compact serialization"},
		{"padded signature", []string{goodProof + "=="}, "", nil, invalid, "the DPoP proof is not a JWS in compact serialization"},
		{"JWS JSON serialization", []string{`{"payload":"e30","signatures":[]}`}, "", nil, invalid, "the DPoP proof is not a JWS in compact serialization"},
		{"header not base64url", []string{"e30*." + b64(good) + ".AAAA"}, "", nil, invalid, "the DPoP proof's JOSE header is malformed"},
		{"header not an object", []string{sign(`["dpop+jwt"]`, good)}, "", nil, invalid, "the DPoP proof's JOSE header is malformed"},
		{"header member twice", []string{sign(`{"typ":"dpop+jwt","alg":"none","alg":"ES256","jwk":`+string(es.pub)+`}`, good)}, "", nil, invalid, "the DPoP proof's JOSE header is malformed"},
		{"header member in another case", []string{sign(`{"TYP":"dpop+jwt","alg":"ES256","jwk":`+string(es.pub)+`}`, good)}, "", nil, invalid, "the DPoP proof's JOSE header is malformed"},
		{"typ missing", []string{sign(`{"alg":"ES256","jwk":`+string(es.pub)+`}`, good)}, "", nil, invalid, "the DPoP proof's typ must be dpop+jwt"},
		{"typ JWT", []string{sign(`{"typ":"JWT","alg":"ES256","jwk":`+string(es.pub)+`}`, good)}, "", nil, invalid, "the DPoP proof's typ must be dpop+jwt"},
		{"alg none", []string{b64(`{"typ":"dpop+jwt","alg":"none","jwk":`+string(es.pub)+`}`) + "." + b64(good) + ".AAAA"}, "", nil, invalid, "the DPoP proof's alg is not supported (ES256 ES384 RS256 PS256 EdDSA Ed25519)"},
		{"alg HS256", []string{b64(`{"typ":"dpop+jwt","alg":"HS256","jwk":{"kty":"oct","k":"c2VjcmV0"}}`) + "." + b64(good) + ".AAAA"}, "", nil, invalid, "the DPoP proof's alg is not supported (ES256 ES384 RS256 PS256 EdDSA Ed25519)"},
		{"alg RS384", []string{rawProof(t, rs.priv, "RS384", header("RS384", rs.pub), good)}, "", nil, invalid, "the DPoP proof's alg is not supported (ES256 ES384 RS256 PS256 EdDSA Ed25519)"},
		{"alg in lower case", []string{sign(header("es256", es.pub), good)}, "", nil, invalid, "the DPoP proof's alg is not supported (ES256 ES384 RS256 PS256 EdDSA Ed25519)"},
		{"crit", []string{sign(`{"typ":"dpop+jwt","alg":"ES256","crit":["exp"],"jwk":`+string(es.pub)+`}`, good)}, "", nil, invalid, "the DPoP proof's header carries crit or b64, which are not supported"},
		{"b64", []string{sign(`{"typ":"dpop+jwt","alg":"ES256","b64":true,"jwk":`+string(es.pub)+`}`, good)}, "", nil, invalid, "the DPoP proof's header carries crit or b64, which are not supported"},
		{"no jwk", []string{sign(`{"typ":"dpop+jwt","alg":"ES256","kid":"k1"}`, good)}, "", nil, invalid, "the DPoP proof's header carries no jwk"},
		{"jwk null", []string{sign(`{"typ":"dpop+jwt","alg":"ES256","jwk":null}`, good)}, "", nil, invalid, "the DPoP proof's header carries no jwk"},
		{"private EC jwk (d)", []string{sign(header("ES256", privECJSON), good)}, "", nil, invalid, "the DPoP proof's jwk holds private key material"},
		{"RSA jwk with a prime (p)", []string{rawProof(t, rs.priv, "RS256", header("RS256", rsaWithP), good)}, "", nil, invalid, "the DPoP proof's jwk holds private key material"},
		{"symmetric jwk (k)", []string{sign(`{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"oct","k":"c2VjcmV0"}}`, good)}, "", nil, invalid, "the DPoP proof's jwk holds private key material"},
		{"jwk member in another case", []string{sign(`{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","X":"a","x":"b","y":"c"}}`, good)}, "", nil, invalid, "the DPoP proof's jwk is malformed or does not fit its alg"},
		{"jwk not an object", []string{sign(`{"typ":"dpop+jwt","alg":"ES256","jwk":"EC"}`, good)}, "", nil, invalid, "the DPoP proof's jwk is malformed or does not fit its alg"},
		{"RSA jwk with ES256", []string{sign(header("ES256", rs.pub), good)}, "", nil, invalid, "the DPoP proof's jwk is malformed or does not fit its alg"},
		{"P-384 jwk with ES256", []string{sign(header("ES256", es384.pub), good)}, "", nil, invalid, "the DPoP proof's jwk is malformed or does not fit its alg"},
		{"Ed25519 jwk with ES256", []string{sign(header("ES256", ed.pub), good)}, "", nil, invalid, "the DPoP proof's jwk is malformed or does not fit its alg"},
		{"EC jwk with EdDSA", []string{rawProof(t, ed.priv, "EdDSA", header("EdDSA", es.pub), good)}, "", nil, invalid, "the DPoP proof's jwk is malformed or does not fit its alg"},
		{"RSA key of 1024 bits", []string{rawProof(t, small, "RS256", header("RS256", rsaJWK(small)), good)}, "", nil, invalid, "the DPoP proof's jwk is malformed or does not fit its alg"},
		{"EC point not on the curve", []string{sign(`{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":"`+b64(strings.Repeat("\x01", 32))+`","y":"`+b64(strings.Repeat("\x02", 32))+`"}}`, good)}, "", nil, invalid, "the DPoP proof's jwk is malformed or does not fit its alg"},
		{"signed by another key", []string{rawProof(t, other, "ES256", goodHeader, good)}, "", nil, invalid, "the DPoP proof's signature does not verify with its jwk"},
		{"payload altered", []string{strings.Split(goodProof, ".")[0] + "." + b64(claimsWith(func(c map[string]any) { c["htm"] = "GET" })) + "." + strings.Split(goodProof, ".")[2]}, "", nil, invalid, "the DPoP proof's signature does not verify with its jwk"},
		{"claims not an object", []string{sign(goodHeader, `"x"`)}, "", nil, invalid, "the DPoP proof's claims are malformed"},
		{"claim twice", []string{sign(goodHeader, `{"jti":"a","htm":"GET","htm":"POST","htu":"`+testURI+`","iat":`+mustJSON(t, now.Unix())+`}`)}, "", nil, invalid, "the DPoP proof's claims are malformed"},
		{"claim in another case", []string{sign(goodHeader, `{"jti":"a","HTM":"POST","htu":"`+testURI+`","iat":`+mustJSON(t, now.Unix())+`}`)}, "", nil, invalid, "the DPoP proof's claims are malformed"},
		{"iat a string", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["iat"] = "1800000000" }))}, "", nil, invalid, "the DPoP proof's claims are malformed"},
		{"jti missing", []string{sign(goodHeader, claimsWith(func(c map[string]any) { delete(c, "jti") }))}, "", nil, invalid, "the DPoP proof's jti is missing or too long"},
		{"jti empty", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["jti"] = "" }))}, "", nil, invalid, "the DPoP proof's jti is missing or too long"},
		{"jti too long", []string{sign(goodHeader, longJTI)}, "", nil, invalid, "the DPoP proof's jti is missing or too long"},
		{"htm missing", []string{sign(goodHeader, claimsWith(func(c map[string]any) { delete(c, "htm") }))}, "", nil, invalid, "the DPoP proof's htm does not match the request's method"},
		{"htm in lower case", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["htm"] = "post" }))}, "", nil, invalid, "the DPoP proof's htm does not match the request's method"},
		{"htm another method", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["htm"] = "GET" }))}, "", nil, invalid, "the DPoP proof's htm does not match the request's method"},
		{"htu missing", []string{sign(goodHeader, claimsWith(func(c map[string]any) { delete(c, "htu") }))}, "", nil, invalid, "the DPoP proof's htu does not match the request's URI"},
		{"htu another host", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["htu"] = "https://evil.example.com/api/v1/oauth/token/" }))}, "", nil, invalid, "the DPoP proof's htu does not match the request's URI"},
		{"htu another path", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["htu"] = "https://auth.example.com/api/v1/me/" }))}, "", nil, invalid, "the DPoP proof's htu does not match the request's URI"},
		{"htu http for https", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["htu"] = "http://auth.example.com/api/v1/oauth/token/" }))}, "", nil, invalid, "the DPoP proof's htu does not match the request's URI"},
		{"htu another port", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["htu"] = "https://auth.example.com:8443/api/v1/oauth/token/" }))}, "", nil, invalid, "the DPoP proof's htu does not match the request's URI"},
		{"htu relative", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["htu"] = "/api/v1/oauth/token/" }))}, "", nil, invalid, "the DPoP proof's htu does not match the request's URI"},
		{"htu with userinfo", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["htu"] = "https://u@auth.example.com/api/v1/oauth/token/" }))}, "", nil, invalid, "the DPoP proof's htu does not match the request's URI"},
		{"iat missing", []string{sign(goodHeader, claimsWith(func(c map[string]any) { delete(c, "iat") }))}, "", nil, invalid, "the DPoP proof's iat is missing"},
		{"iat too old", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["iat"] = now.Add(-dpop.DefaultWindow - time.Second).Unix() }))}, "", nil, invalid, "the DPoP proof's iat is too old"},
		{"iat in the future", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["iat"] = now.Add(dpop.DefaultLeeway + time.Second).Unix() }))}, "", nil, invalid, "the DPoP proof's iat is in the future"},
		{"iat negative", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["iat"] = -1 }))}, "", nil, invalid, "the DPoP proof's claims are malformed"},
		{"ath missing with a token", []string{goodProof}, "svc_at_token", nil, invalid, "the DPoP proof's ath is missing"},
		{"ath of another token", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["ath"] = dpop.AccessTokenHash("svc_at_other") }))}, "svc_at_token", nil, invalid, "the DPoP proof's ath does not match the access token"},
		{"nonce missing", []string{goodProof}, "", staticNonces("n-1"), nonce, "a DPoP nonce is required"},
		{"nonce stale", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["nonce"] = "n-0" }))}, "", staticNonces("n-1"), nonce, "the DPoP proof's nonce is not fresh"},
		{"nonce stale but the proof bad otherwise", []string{sign(goodHeader, claimsWith(func(c map[string]any) { c["nonce"] = "n-0"; c["htm"] = "GET" }))}, "", staticNonces("n-1"), invalid, "the DPoP proof's htm does not match the request's method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dpop.Verify(dpop.Input{Headers: tc.headers, Method: testMethod, URI: testURI, AccessToken: tc.token, Now: now, Nonces: tc.nonces})
			var e *dpop.Error
			if !errors.As(err, &e) {
				t.Fatalf("Verify: %v, want a *dpop.Error", err)
			}
			if e.Code() != tc.code || e.Description != tc.desc {
				t.Fatalf("refused with %s %q, want %s %q", e.Code(), e.Description, tc.code, tc.desc)
			}
			wantKind := dpop.ErrInvalidProof
			if tc.code == nonce {
				wantKind = dpop.ErrUseNonce
			}
			if !errors.Is(err, wantKind) || err.Error() != "dpop: "+tc.code+": "+tc.desc {
				t.Fatalf("errors.Is(%v, kind) false or Error() %q", err, err.Error())
			}
		})
	}
}

func TestCheckBinding(t *testing.T) {
	p := dpop.Proof{JKT: rfcJKT}
	if err := dpop.CheckBinding(p, rfcJKT); err != nil {
		t.Fatalf("same key: %v", err)
	}
	for _, jkt := range []string{"", "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4J", rfcJKT + "A"} {
		err := dpop.CheckBinding(p, jkt)
		if !errors.Is(err, dpop.ErrInvalidProof) || err.Error() != "dpop: invalid_dpop_proof: the DPoP proof's key is not the key the access token is bound to" {
			t.Fatalf("jkt %q: %v", jkt, err)
		}
	}
}

func TestChallenge(t *testing.T) {
	for _, tc := range []struct{ code, desc, want string }{
		{"", "", `DPoP algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`},
		{dpop.CodeInvalidProof, "the DPoP proof's iat is too old", `DPoP error="invalid_dpop_proof", error_description="the DPoP proof's iat is too old", algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`},
		{dpop.CodeUseNonce, "", `DPoP error="use_dpop_nonce", algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`},
		{"invalid_token", `a "quoted" \ text` + "\n", `DPoP error="invalid_token", error_description="a \"quoted\" \\ text", algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`},
	} {
		if got := dpop.Challenge(tc.code, tc.desc); got != tc.want {
			t.Errorf("Challenge(%q, %q) = %s, want %s", tc.code, tc.desc, got, tc.want)
		}
	}
}

func TestReplay(t *testing.T) {
	a := dpop.ReplayKey(dpop.Proof{JKT: rfcJKT, JTI: "-BwC3ESc6acc2lTc"})
	if len(a) != 32 || strings.Trim(a, "0123456789abcdef") != "" {
		t.Fatalf("ReplayKey = %q, want 32 hex characters", a)
	}
	if b := dpop.ReplayKey(dpop.Proof{JKT: rfcJKT, JTI: "-BwC3ESc6acc2lTc", IssuedAt: now}); b != a {
		t.Fatalf("ReplayKey depends on more than jkt and jti: %q, %q", a, b)
	}
	for _, p := range []dpop.Proof{{JKT: rfcJKT, JTI: "-BwC3ESc6acc2lTd"}, {JKT: "other", JTI: "-BwC3ESc6acc2lTc"}, {JKT: rfcJKT + "-", JTI: "BwC3ESc6acc2lTc"}} {
		if dpop.ReplayKey(p) == a {
			t.Fatalf("ReplayKey(%+v) collides", p)
		}
	}
	if got := dpop.ReplayTTL(0, 0); got != 66*time.Second {
		t.Fatalf("ReplayTTL(0, 0) = %v, want 66s (60 s window, 5 s leeway, 1 s margin)", got)
	}
	if got := dpop.ReplayTTL(2*time.Minute, 10*time.Second); got != 131*time.Second {
		t.Fatalf("ReplayTTL(2m, 10s) = %v", got)
	}
	if dpop.ErrReplayed.Error() != "dpop: invalid_dpop_proof: the DPoP proof was used before" || !errors.Is(dpop.ErrReplayed, dpop.ErrInvalidProof) {
		t.Fatalf("ErrReplayed = %v", dpop.ErrReplayed)
	}
}

// rsaJWK is the public JWK of an RSA key, by hand: jwx refuses to make one
// of a key under 2048 bits.
func rsaJWK(k *rsa.PrivateKey) json.RawMessage {
	return json.RawMessage(`{"kty":"RSA","n":"` + b64(string(k.N.Bytes())) + `","e":"AQAB"}`)
}

// TestReplayTTLCoversAcceptance: a proof dated as far ahead as accepted is
// still accepted window+leeway after its first use, and refused once its
// replay mark (ReplayTTL) has expired; so the mark outlives every moment
// the proof can be replayed, by ReplayMargin.
func TestReplayTTLCoversAcceptance(t *testing.T) {
	k := keyFor(t, "ES256")
	for _, w := range []struct{ window, leeway time.Duration }{{0, 0}, {2 * time.Minute, 10 * time.Second}} {
		window, leeway := w.window, w.leeway
		if window == 0 {
			window, leeway = dpop.DefaultWindow, dpop.DefaultLeeway
		}
		c := goodClaims()
		c["iat"] = now.Add(leeway).Unix()
		in := dpop.Input{Headers: []string{jwxProof(t, k, c)}, Method: testMethod, URI: testURI, Window: w.window, Leeway: w.leeway}
		for _, at := range []struct {
			after time.Duration
			ok    bool
		}{{0, true}, {window + leeway, true}, {dpop.ReplayTTL(w.window, w.leeway), false}} {
			in.Now = now.Add(at.after)
			_, err := dpop.Verify(in)
			if (err == nil) != at.ok {
				t.Errorf("window %v, leeway %v, %v after first use: %v", window, leeway, at.after, err)
			}
		}
		// The same proof dated one second further ahead is refused.
		c["iat"] = now.Add(leeway + time.Second).Unix()
		in.Headers, in.Now = []string{jwxProof(t, k, c)}, now
		if _, err := dpop.Verify(in); !errors.Is(err, dpop.ErrInvalidProof) {
			t.Errorf("iat leeway+1s ahead: %v", err)
		}
	}
}
