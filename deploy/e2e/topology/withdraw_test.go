//go:build unix

package topology

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/testwait"
)

// withdrawalDeadline is what the issue asks: every resource server refuses
// a withdrawn key's tokens within a minute.
const withdrawalDeadline = 60 * time.Second

// TestKeyWithdrawal runs an emergency key withdrawal on the real binaries:
// two token service replicas and two resource servers, all holding a
// verified token of the signing key K1 in their caches. The operator
// rotates (`keys generate --rotate --keep 1`: K2 signs, K1 still
// published) and withdraws K1 (`keys withdraw`), restarting nothing. The
// test measures how long until each resource server answers 401 for the
// K1 token, checks that both token service replicas report it inactive at
// introspection and publish only K2, and that a new token (K2) works on
// both resource servers.
func TestKeyWithdrawal(t *testing.T) {
	t.Parallel() // beside the other quick tests; the long ones run alone first
	if testing.Short() {
		t.Skip("-short: this test builds the servers and starts seven processes")
	}
	requireCommand(t, "redis-server")
	requireCommand(t, "caddy")
	top := startTopology(t, 2, 2)
	keys := filepath.Join(top.home, "jwks.json")
	c := top.createClient(t, "patients.read")
	top.cli(t, "clients", "set-rate-limit", c.ID, "100000") // the polling below is not rate limited
	old := top.token(t, c, basicAuth)
	k1 := kidOf(t, old)
	for _, rs := range top.resource {
		top.wantMe(t, rs.base, old, c.ID) // verified and cached
	}
	for _, as := range top.auth {
		if !top.introspectAt(t, as.base, c, old) {
			t.Fatalf("%s: the K1 token is inactive before the withdrawal", as)
		}
	}

	top.cli(t, "keys", "generate", "--out", keys, "--rotate", "--keep", "1")
	start := time.Now()
	out := top.cli(t, "keys", "withdraw", "--file", keys, "--json", "--", k1)
	cliDone := time.Since(start)
	var res struct {
		Withdrawn  string   `json:"withdrawn"`
		SigningKid string   `json:"signing_kid"`
		Kids       []string `json:"kids"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Withdrawn != k1 || len(res.Kids) != 1 || res.Kids[0] != res.SigningKid {
		t.Fatalf("keys withdraw --json: %s (%v)", out, err)
	}
	k2 := res.SigningKid

	// Each resource server, polled directly every 10 ms.
	for _, rs := range top.resource {
		testwait.Eventually(t, withdrawalDeadline-time.Since(start), fmt.Sprintf("%s refuses the withdrawn key's token", rs), func() bool {
			a := top.me(t, rs.base, old, nil)
			if a.status != http.StatusOK && a.status != http.StatusUnauthorized {
				t.Fatalf("%s: GET /api/v1/me/ with the K1 token: %d %s", rs, a.status, a.body)
			}
			return a.status == http.StatusUnauthorized
		})
		took := time.Since(start)
		t.Logf("%s: 401 for the withdrawn key's token %s after the withdrawal began (the command itself took %s)", rs, took.Round(time.Millisecond), cliDone.Round(time.Millisecond))
	}
	// The token service replicas: inactive at introspection, K1 no
	// longer published, and they sign with K2 (they reloaded the file).
	for _, as := range top.auth {
		testwait.Eventually(t, withdrawalDeadline, fmt.Sprintf("%s: the K1 token inactive at introspection", as), func() bool {
			return !top.introspectAt(t, as.base, c, old)
		})
		if kids := top.jwksKids(t, as.base); len(kids) != 1 || kids[0] != k2 {
			t.Errorf("%s publishes %v, want only %s", as, kids, k2)
		}
	}
	t.Logf("token service replicas: K1 token inactive, only K2 published, %s after the withdrawal began", time.Since(start).Round(time.Millisecond))
	// New tokens are signed with K2 by either replica and work everywhere
	// (each resource server fetched the JWKS again on the notice).
	for i := range 4 {
		tok := top.token(t, c, basicAuth)
		if kid := kidOf(t, tok); kid != k2 {
			t.Fatalf("token %d after the withdrawal signed by %s, want %s", i, kid, k2)
		}
		for _, rs := range top.resource {
			testwait.Until(t, 15*time.Second, fmt.Sprintf("%s: the K2 token admitted", rs), func() error {
				if a := top.me(t, rs.base, tok, nil); a.status != http.StatusOK {
					return fmt.Errorf("%d %s", a.status, a.body)
				}
				return nil
			})
		}
	}
}

// kidOf is the "kid" of a token's JOSE header.
func kidOf(t *testing.T, token string) string {
	t.Helper()
	seg := strings.SplitN(strings.TrimPrefix(token, "svc_at_"), ".", 2)[0]
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	var h struct {
		Kid string `json:"kid"`
	}
	if err != nil || json.Unmarshal(raw, &h) != nil || h.Kid == "" {
		t.Fatalf("no kid in %q", seg)
	}
	return h.Kid
}

// introspectAt asks the token service at base whether token is active,
// authenticating as c.
func (top *topology) introspectAt(t *testing.T, base string, c credentials, token string) bool {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/oauth/introspect/", strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	a := top.do(t, req)
	var body struct {
		Active bool `json:"active"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &body) != nil {
		t.Fatalf("introspection at %s: %d %s", base, a.status, a.body)
	}
	return body.Active
}

// jwksKids lists the kids the token service at base publishes.
func (top *topology) jwksKids(t *testing.T, base string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+"/.well-known/jwks.json", nil)
	a := top.do(t, req)
	var doc struct {
		Keys []struct {
			Kid string `json:"kid"`
		} `json:"keys"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &doc) != nil {
		t.Fatalf("JWKS at %s: %d %s", base, a.status, a.body)
	}
	var kids []string
	for _, k := range doc.Keys {
		kids = append(kids, k.Kid)
	}
	return kids
}
