package sdk

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// dpopVerifier is a token endpoint and an API that check the SDK's DPoP
// proofs with pkg/dpop, the package the servers verify them with: Verify
// (nonces on, from a NonceSource), the single use of ReplayKey, and at the
// API the ath and CheckBinding. It records one line per request.
type dpopVerifier struct {
	t      *testing.T
	srv    *httptest.Server
	nonces *dpop.NonceSource

	mu   sync.Mutex
	used map[string]bool   // ReplayKey marks
	jkt  map[string]string // access token -> cnf.jkt
	log  []string
}

func newDPoPVerifier(t *testing.T) *dpopVerifier {
	ns, err := dpop.NewNonceSource([]byte(strings.Repeat("n", dpop.MinNonceSecret)), 0)
	if err != nil {
		t.Fatal(err)
	}
	v := &dpopVerifier{t: t, nonces: ns, used: map[string]bool{}, jkt: map[string]string{}}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *dpopVerifier) serve(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := time.Now()
	// The target URI with its query: Verify compares htu without it.
	in := dpop.Input{Headers: r.Header.Values("DPoP"), Method: r.Method, URI: v.srv.URL + r.URL.RequestURI(), Now: now, Nonces: v.nonces}
	token := ""
	if r.URL.Path != partnerclient.DefaultTokenPath {
		var ok bool
		if token, ok = strings.CutPrefix(r.Header.Get("Authorization"), "DPoP "); !ok || v.jkt[token] == "" {
			v.refuse(w, r, http.StatusUnauthorized, "invalid_token", "no DPoP-bound token")
			return
		}
		in.AccessToken = token
	}
	p, err := dpop.Verify(in)
	if err == nil && token != "" {
		err = dpop.CheckBinding(p, v.jkt[token])
	}
	if err == nil && v.used[dpop.ReplayKey(p)] {
		err = dpop.ErrReplayed
	}
	var de *dpop.Error
	if errors.As(err, &de) {
		w.Header().Set("DPoP-Nonce", v.nonces.Nonce(now))
		status := http.StatusUnauthorized
		if token == "" {
			status = http.StatusBadRequest // RFC 9449 section 5
		}
		v.refuse(w, r, status, de.Code(), de.Description)
		return
	}
	if err != nil {
		v.t.Errorf("Verify: %v", err)
		return
	}
	v.used[dpop.ReplayKey(p)] = true
	v.log = append(v.log, r.Method+" "+r.URL.Path+" 200")
	w.Header().Set("Content-Type", "application/json")
	if token == "" {
		tok := fmt.Sprintf("svc_at_%d", len(v.jkt)+1)
		v.jkt[tok] = p.JKT
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"DPoP","expires_in":3600,"scope":""}`, tok)
		return
	}
	fmt.Fprintf(w, `{"client_id":"svc_client","jkt":%q}`, p.JKT)
}

func (v *dpopVerifier) refuse(w http.ResponseWriter, r *http.Request, status int, code, desc string) {
	v.log = append(v.log, fmt.Sprintf("%s %s %d %s", r.Method, r.URL.Path, status, code))
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", dpop.Challenge(code, desc))
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"detail":%q}`, desc)
		return
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q,"error_description":%q}`, code, desc)
}

// TestDPoPSDKProofsVerify: the proofs the SDK makes, for each algorithm,
// verify with pkg/dpop: at the token endpoint (after the nonce round of
// RFC 9449 section 8), and at the API with ath, the token's binding and the
// nonce; the thumbprints agree.
func TestDPoPSDKProofsVerify(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		alg string
		key crypto.Signer
	}{{"ES256", p256}, {"ES384", p384}, {"RS256", rsaKey}, {"PS256", rsaKey}, {"EdDSA", edKey}, {"Ed25519", edKey}} {
		t.Run(tc.alg, func(t *testing.T) {
			v := newDPoPVerifier(t)
			c, err := partnerclient.New(partnerclient.Config{BaseURL: v.srv.URL, ClientID: "svc_client", ClientSecret: "svc_cs_x",
				DPoPKey: tc.key, DPoPAlgorithm: tc.alg})
			if err != nil {
				t.Fatal(err)
			}
			for _, req := range []struct{ method, path, body string }{
				{http.MethodGet, "/api/v1/me/?page=2", ""},
				{http.MethodPost, "/api/v1/referrals/", `{"a":1}`},
				{http.MethodGet, "/api/v1/me/", ""},
			} {
				r, err := http.NewRequestWithContext(context.Background(), req.method, v.srv.URL+req.path, strings.NewReader(req.body))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := c.HTTPClient().Do(r)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := fmt.Sprintf(`{"client_id":"svc_client","jkt":%q}`, c.TokenSource().DPoPThumbprint())
				if resp.StatusCode != http.StatusOK || string(body) != want {
					t.Fatalf("%s %s: %d %s, want 200 %s", req.method, req.path, resp.StatusCode, body, want)
				}
			}
			// The SDK learnt the nonce from the token endpoint's
			// use_dpop_nonce and used it from then on.
			want := "POST /api/v1/oauth/token/ 400 use_dpop_nonce, POST /api/v1/oauth/token/ 200, " +
				"GET /api/v1/me/ 200, POST /api/v1/referrals/ 200, GET /api/v1/me/ 200"
			v.mu.Lock()
			got := strings.Join(v.log, ", ")
			v.mu.Unlock()
			if got != want {
				t.Fatalf("requests:\n%s\nwant\n%s", got, want)
			}
			jkt, err := partnerclient.DPoPThumbprint(tc.key.Public())
			if err != nil || jkt != c.TokenSource().DPoPThumbprint() || jkt != v.jkt["svc_at_1"] {
				t.Fatalf("thumbprints: partnerclient %q (%v), token source %q, pkg/dpop %q", jkt, err, c.TokenSource().DPoPThumbprint(), v.jkt["svc_at_1"])
			}
		})
	}
}
