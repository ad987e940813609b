package sdk

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// dpopScenarios produce the answers of the DPoP guide
// (resourceserver/apidocs/guides/dpop.md), each with a client of its own.
func (f *docsFixture) dpopScenarios() map[string]func() reply {
	grant := "grant_type=client_credentials"
	return map[string]func() reply{
		"POST /api/v1/oauth/token/ 200 DPoP": func() reply {
			id, secret := f.fresh()
			p := newDPoPProof(f.t, http.MethodPost, issuer+tokenPath, time.Now())
			return f.request(http.MethodPost, tokenPath, formType, grant, basicAuth(id, secret), func(r *http.Request) { r.Header.Set("DPoP", p) })
		},
		"GET /api/v1/me/ 401 invalid_dpop_proof": func() reply {
			// The token bound to one key, the proof signed by another.
			tok := f.dpopToken()
			thief, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				f.t.Fatal(err)
			}
			p := boundProof(f.t, thief, http.MethodGet, f.s.url+pathMe, tok)
			return f.request(http.MethodGet, pathMe, "", "", func(r *http.Request) {
				r.Header.Set("Authorization", "DPoP "+tok)
				r.Header.Set("DPoP", p)
			})
		},
		"GET /api/v1/me/ 401 dpop_invalid_token": func() reply {
			return f.request(http.MethodGet, pathMe, "", "", bearer(f.dpopToken())) // a bound token as Bearer
		},
		"DPoP proof header":                func() reply { return f.sdkProofPart(tokenPath, 0) },
		"DPoP proof claims, token request": func() reply { return f.sdkProofPart(tokenPath, 1) },
		"DPoP proof claims, API request":   func() reply { return f.sdkProofPart(pathMe, 1) },
	}
}

// dpopToken is a DPoP-bound token of a new client, bound to a key of its
// own (newDPoPProof's).
func (f *docsFixture) dpopToken() string {
	f.t.Helper()
	id, secret := f.fresh()
	p := newDPoPProof(f.t, http.MethodPost, issuer+tokenPath, time.Now())
	r := f.request(http.MethodPost, tokenPath, formType, "grant_type=client_credentials", basicAuth(id, secret), func(r *http.Request) { r.Header.Set("DPoP", p) })
	var tr struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &tr) != nil || tr.TokenType != "DPoP" {
		f.t.Fatalf("DPoP token: %d %s", r.Status, r.Body)
	}
	return tr.AccessToken
}

// sdkProofPart decodes part i (0 header, 1 claims) of the DPoP proof the
// Go SDK sends to path, for a new client with an ES256 key, getting a
// token from the issuer's token endpoint URL (the metadata's
// token_endpoint) and calling GET /api/v1/me/ at the stack's URL; both
// requests must succeed.
func (f *docsFixture) sdkProofPart(path string, i int) reply {
	f.t.Helper()
	id, secret := f.fresh()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.t.Fatal(err)
	}
	stackURL, err := url.Parse(f.s.url)
	if err != nil {
		f.t.Fatal(err)
	}
	var mu sync.Mutex
	sent := map[string]string{}
	rec := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		sent[r.URL.Path] = r.Header.Get("DPoP")
		mu.Unlock()
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.Host = stackURL.Scheme, stackURL.Host, "" // the issuer's URL served by the stack
		return http.DefaultTransport.RoundTrip(r)
	})}
	c, err := partnerclient.New(partnerclient.Config{
		BaseURL: f.s.url, TokenURL: issuer + tokenPath, ClientID: id, ClientSecret: secret, DPoPKey: key, HTTPClient: rec,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := c.Me(context.Background()); err != nil {
		f.t.Fatalf("SDK with a DPoP key: %v", err)
	}
	parts := strings.Split(sent[path], ".")
	if len(parts) != 3 {
		f.t.Fatalf("the SDK sent no compact JWS as the DPoP proof to %s: %q", path, sent[path])
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		f.t.Fatal(err)
	}
	return reply{Status: http.StatusOK, Header: http.Header{}, Body: raw}
}
