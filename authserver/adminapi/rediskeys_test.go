package adminapi_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/dpopnonce"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// keyListFile lists every Redis key the platform writes.
const keyListFile = "../../deploy/docs/redis-keys.md"

// listedKey is one row of the key list.
type listedKey struct {
	pattern   string
	re        *regexp.Regexp
	transient bool
}

// placeholders of the key list, as regular expressions.
var placeholders = map[string]string{
	"CLIENT_ID": `svc_[a-z2-7]{24}`,
	"SLUG":      `[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?`,
	"ADDR":      `.+`,
	"JTI":       `.+`,
	"MARK":      `[0-9a-f]{32}`,
	"MINUTE":    `[0-9]+`,
	"H":         `[0-9a-f]{32}`,
}

func readKeyList(t *testing.T) []listedKey {
	t.Helper()
	doc, err := os.ReadFile(keyListFile)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([^`]+)` \\|(.*)\\|$")
	var out []listedKey
	for line := range strings.SplitSeq(string(doc), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		expr := regexp.QuoteMeta(m[1])
		for name, re := range placeholders {
			expr = regexp.MustCompile(`\b`+name+`\b`).ReplaceAllLiteralString(expr, "(?:"+re+")")
		}
		out = append(out, listedKey{pattern: m[1], re: regexp.MustCompile("^" + expr + "$"), transient: strings.Contains(m[2], "transient")})
	}
	if len(out) < 10 {
		t.Fatalf("%s: %d keys listed; the table was not read", keyListFile, len(out))
	}
	return out
}

// TestRedisKeysListed runs every kind of operation that writes to Redis
// (the registry, its limits, revocation and jti marks, the admin API's
// idempotency records and audit, key withdrawal) under one prefix, and
// checks the keys written against deploy/docs/redis-keys.md: each key
// matches a listed pattern, and each listed pattern (but the transient
// ones) was written.
func TestRedisKeysListed(t *testing.T) {
	s := newStack(t, options{})
	ctx := t.Context()
	_, _, hc := s.operator(false)
	if a := s.call(hc, "POST", "/admin/v1/orgs", map[string]any{"slug": "keys", "name": "Keys", "environment": "live"},
		"Idempotency-Key", "7d4c2b1a-9e8f-4a6b-8c0d-1e2f3a4b5c6d"); a.Status != 201 {
		t.Fatalf("create org: %d %s", a.Status, a.Body)
	}
	a := s.call(hc, "POST", "/admin/v1/clients", map[string]any{"organization_slug": "keys", "name": "c", "audience": "hospital", "scopes": []string{"patients.read"}})
	id, _ := a.json(t)["client_id"].(string)
	if a := s.call(hc, "POST", "/admin/v1/clients/"+id+"/rotate-secret", nil); a.Status != 200 {
		t.Fatalf("rotate: %d %s", a.Status, a.Body)
	}
	key := assertiontest.NewKey(t, "k1", jwa.ES256())
	a = s.call(hc, "POST", "/admin/v1/clients", map[string]any{"organization_slug": "keys", "name": "k", "audience": "pharma", "scopes": []string{},
		"auth_method": "private_key_jwt", "jwks": jsonRaw(assertiontest.JWKS(t, key))})
	keyed, _ := a.json(t)["client_id"].(string)
	if a.Status != 201 {
		t.Fatalf("create keyed client: %d %s", a.Status, a.Body)
	}
	// A verified assertion (its jti marked used), a wrong secret, then the
	// same wrong secret again (a repeat).
	if r, err := s.store.Authenticate(ctx, clients.Attempt{ClientID: keyed, Address: "192.0.2.1", FailureLimit: 60, Token: true,
		Assertion: &clients.AssertionCheck{Raw: "a", Verified: true, KeysVersion: "1", JTI: "jti-1", Expires: time.Now().Add(time.Minute)}}); err != nil || r.Outcome != clients.Authenticated {
		t.Fatalf("assertion: %+v %v", r, err)
	}
	// A token request with a verified DPoP proof (its mark set).
	if r, err := s.store.Authenticate(ctx, clients.Attempt{ClientID: keyed, Address: "192.0.2.1", FailureLimit: 60, Token: true,
		Assertion: &clients.AssertionCheck{Raw: "b", Verified: true, KeysVersion: "1", JTI: "jti-2", Expires: time.Now().Add(time.Minute)},
		DPoP:      &clients.ProofCheck{Verified: true, Proof: dpop.Proof{JKT: "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", JTI: "p-1"}, TTL: dpop.ReplayTTL(0, 0)}}); err != nil || r.Outcome != clients.Authenticated {
		t.Fatalf("DPoP proof: %+v %v", r, err)
	}
	wrong := clients.NewSecret()
	for range 2 {
		if st := s.tokenStatus(id, wrong); st != 401 {
			t.Fatalf("wrong secret: %d", st)
		}
	}
	if err := s.store.RevokeToken(ctx, clients.TokenRef{ClientID: id, ID: "tok-1"}, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := keywithdrawal.NewStore(s.rdb, s.prefix).Withdraw(ctx, "old-kid"); err != nil {
		t.Fatal(err)
	}
	// A DPoP-bound call (its proof's replay mark, RFC 9449 section 11.1)
	// and the shared DPoP nonce secret (DPOP_NONCES).
	kc, err := s.store.GetClient(ctx, keyed)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := s.store.AdmitAPI(ctx, clients.TokenRef{ClientID: keyed, Generation: kc.Generation, SecretID: 1, ID: "tok-2", ExpiresAt: time.Now().Add(time.Hour).Unix(),
		DPoPReplay: "0123456789abcdef0123456789abcdef", DPoPReplayTTL: time.Minute}, nil); err != nil || a.Outcome != clients.Admitted {
		t.Fatalf("DPoP admission: %+v %v", a, err)
	}
	if _, err := dpopnonce.SharedNonces(ctx, s.rdb, s.prefix); err != nil {
		t.Fatal(err)
	}
	if a := s.call(hc, "POST", "/admin/v1/sandbox/seed", nil); a.Status != 200 {
		t.Fatalf("seed: %d %s", a.Status, a.Body)
	}
	// A minute of usage sampled (the console's chart): the clients above
	// made requests in it.
	if took, err := s.store.RecordUsage(ctx, time.Now()); err != nil || !took {
		t.Fatalf("record usage: %v %v", took, err)
	}

	listed := readKeyList(t)
	written, err := redistest.Keys(ctx, s.rdb, s.prefix+"*")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range written {
		k = strings.TrimPrefix(k, s.prefix)
		found := false
		for _, l := range listed {
			if l.re.MatchString(k) {
				seen[l.pattern], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("key %q is not in %s", k, keyListFile)
		}
	}
	for _, l := range listed {
		if !seen[l.pattern] && !l.transient {
			t.Errorf("%s lists %q, but no operation wrote such a key", keyListFile, l.pattern)
		}
	}
}

// jsonRaw embeds JSON text in a request body as it is.
type jsonRaw []byte

func (j jsonRaw) MarshalJSON() ([]byte, error) { return j, nil }
