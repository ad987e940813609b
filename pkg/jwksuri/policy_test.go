package jwksuri

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
)

type resolver map[string][]string

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, a := range r[host] {
		out = append(out, netip.MustParseAddr(a))
	}
	if out == nil {
		return nil, errors.New("no such host")
	}
	return out, nil
}

// TestCheckRegistration: a jwks_uri is registered only if every address
// its host resolves to may be fetched, unless the operator allows private
// addresses; its form is checked as before.
func TestCheckRegistration(t *testing.T) {
	r := resolver{
		"keys.partner.example": {"8.8.8.8", "2a00:1450:4001:82a::200e"},
		"internal.example":     {"10.0.0.8"},
		"mixed.example":        {"8.8.8.8", "64:ff9b::7f00:1"},
		"cgnat.example":        {"100.64.0.1"},
	}
	strict := Policy{Resolver: r}
	for _, c := range []struct {
		policy Policy
		uri    string
		want   string // a part of the error; "" passes
	}{
		{strict, "https://keys.partner.example/jwks.json", ""},
		{strict, "https://8.8.8.8/jwks.json", ""},
		{strict, "https://internal.example/jwks.json", `does not fetch from internal.example: address 10.0.0.8 is private-use (RFC 1918) (JWKS_URL_ALLOW_PRIVATE=true allows it)`},
		{strict, "https://mixed.example/jwks.json", "address 64:ff9b::7f00:1 is NAT64 of 127.0.0.1: loopback"},
		{strict, "https://cgnat.example/k", "RFC 6598"},
		{strict, "https://127.0.0.1:8443/k", "loopback"},
		{strict, "https://[::1]/k", "loopback"},
		{strict, "https://[fe80::1%25eth0]/k", "link-local"},
		{strict, "https://nowhere.example/k", `host "nowhere.example" does not resolve`},
		{strict, "http://keys.partner.example/k", "must be https"},
		{Policy{Resolver: r, AllowHTTP: true}, "http://keys.partner.example/k", ""},
		{Policy{Resolver: r, AllowPrivate: true}, "https://internal.example/k", ""},
		{Policy{Resolver: r, AllowPrivate: true}, "https://127.0.0.1/k", ""},
		{Policy{Resolver: r, AllowPrivate: true}, "http://127.0.0.1/k", "must be https"},
		// Issue 59 point 14: a TCP port one can connect to, 1-65535.
		{strict, "https://keys.partner.example:0/k", "the port must be 1-65535"},
		{strict, "https://keys.partner.example:65536/k", "the port must be 1-65535"},
		{strict, "https://keys.partner.example:99999999999999999999/k", "the port must be 1-65535"},
		{strict, "https://keys.partner.example:1/k", ""},
		{strict, "https://keys.partner.example:65535/k", ""},
		{strict, "https://keys.partner.example:/k", ""}, // empty: the scheme's
	} {
		err := c.policy.CheckRegistration(context.Background(), c.uri)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.uri, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, clients.ErrInvalid)):
			t.Errorf("%s: %v, want %q (clients.ErrInvalid)", c.uri, err, c.want)
		}
	}
}

// TestFetch: a loopback jwks_uri is dialled only when the operator allows
// private addresses, a redirect to http is refused, and the set fetched is
// checked as registered keys are.
func TestFetch(t *testing.T) {
	k := assertiontest.NewKey(t, "one", jwa.ES256())
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(assertiontest.JWKS(t, k)) })
	mux.HandleFunc("/empty", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"keys":[]}`)) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx := context.Background()

	_, err := NewFetcher(Policy{AllowHTTP: true}).Fetch(ctx, srv.URL+"/jwks.json")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("loopback under the default policy: %v", err)
	}
	if _, err := NewFetcher(Policy{AllowPrivate: true}).Fetch(ctx, srv.URL+"/jwks.json"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "must be https") {
		t.Fatalf("http without AllowHTTP: %v", err)
	}
	open := NewFetcher(Policy{AllowHTTP: true, AllowPrivate: true})
	set, err := open.Fetch(ctx, srv.URL+"/jwks.json")
	if err != nil || set.Len() != 1 {
		t.Fatalf("allowed: %v", err)
	}
	if _, err := open.Fetch(ctx, srv.URL+"/empty"); err == nil || errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "0 keys") {
		t.Fatalf("empty set: %v", err)
	}
	tlsSrv := httptest.NewTLSServer(http.RedirectHandler(srv.URL+"/jwks.json", http.StatusFound))
	t.Cleanup(tlsSrv.Close)
	redirecting := NewFetcher(Policy{AllowPrivate: true})
	redirecting.client.Transport.(*http.Transport).TLSClientConfig = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig
	if _, err := redirecting.Fetch(ctx, tlsSrv.URL); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("redirect to http: %v", err)
	}
}

// TestFetchRedirects: a fetch follows exactly the documented 3 redirects
// (deploy/docs/operator-guide.md, Keys behind a jwks_uri) and refuses a
// fourth (issue 59 point 14: it stopped after 2).
func TestFetchRedirects(t *testing.T) {
	k := assertiontest.NewKey(t, "one", jwa.ES256())
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(assertiontest.JWKS(t, k)) })
	// /hop/N redirects to /hop/N-1, /hop/0 to the key set.
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		next := "/jwks.json"
		if n := r.PathValue("n"); n != "0" {
			next = "/hop/" + string(rune(n[0]-1))
		}
		http.Redirect(w, r, next, http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f := NewFetcher(Policy{AllowHTTP: true, AllowPrivate: true})
	// /hop/2: three redirects (hop 2, 1, 0) before the key set.
	if set, err := f.Fetch(context.Background(), srv.URL+"/hop/2"); err != nil || set.Len() != 1 {
		t.Errorf("three redirects: %v", err)
	}
	if _, err := f.Fetch(context.Background(), srv.URL+"/hop/3"); err == nil || !strings.Contains(err.Error(), "too many redirects") {
		t.Errorf("four redirects: %v, want too many redirects", err)
	}
}
