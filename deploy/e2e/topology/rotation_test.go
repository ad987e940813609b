//go:build unix

package topology

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/resourceserver/jwks"
)

// TestKeyRotationFirstTokenServed runs the signing-key rotation of
// deploy/docs/signing-keys.md on the real binaries (two token service
// replicas, two resource servers, Caddy): `keys generate --rotate`, then a restart of the
// token service replicas. The first token of the new key, sent to each
// resource server directly (each still holding the old key set), gets 200
// at once: the resource server fetches the key set before answering (issue
// 21 point 4; before, it answered 401 and only then fetched). Then a flood
// of tokens naming made-up key ids on both resource servers: every one is
// answered 401 (none 503), and the JWKS fetches they cause, counted by
// partnerapi_jwks_fetches_total, stay within the on-demand rate limit.
func TestKeyRotationFirstTokenServed(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	t.Parallel()      // beside the other quick tests; the long ones run alone first
	if testing.Short() {
		t.Skip("-short: this test builds the servers and starts seven processes")
	}
	requireCommand(t, "redis-server")
	requireCommand(t, "caddy")
	top := startTopology(t, 2, 2)
	keys := filepath.Join(top.home, "jwks.json")
	c := top.createClient(t, "patients.read")
	top.cli(t, "clients", "set-rate-limit", c.ID, "100000")
	old := top.token(t, c, basicAuth)
	for _, rs := range top.resource {
		top.wantMe(t, rs.base, old, c.ID) // the old key set, loaded and used
	}

	// The rotation, as deploy/docs/signing-keys.md says: a new signing key, then a
	// restart of the token service (each replica on its own port again).
	top.cli(t, "keys", "generate", "--out", keys, "--rotate")
	env := append(top.redisEnv(), "TRUSTED_PROXIES="+edgeAddr+"/32", "LOG_LEVEL=info")
	for i, as := range top.auth {
		as.Kill()
		port, err := strconv.Atoi(as.base[strings.LastIndex(as.base, ":")+1:])
		if err != nil {
			t.Fatal(err)
		}
		top.auth[i] = top.startServerOn(t, port, as.Name, env, "authserver",
			"--keys", keys, "--issuer", top.edge, "--audience", audience)
	}
	for _, as := range top.auth {
		waitOK(t, as.base+"/readyz", as.process)
	}
	waitRoutes(t, top.edge+"/.well-known/jwks.json", top.auth)

	fetchesBefore := make([]float64, len(top.resource))
	for i, rs := range top.resource {
		fetchesBefore[i] = top.jwksFetches(t, rs)
	}
	tok := top.token(t, c, basicAuth)
	if kidOf(t, tok) == kidOf(t, old) {
		t.Fatal("the restarted token service still signs with the old key")
	}
	for i, rs := range top.resource {
		start := time.Now()
		a := top.me(t, rs.base, tok, nil)
		if a.status != http.StatusOK {
			t.Errorf("%s: the first token of the new key: %d %s, want 200", rs, a.status, a.body)
			continue
		}
		t.Logf("%s: first token of the new key answered 200 in %v, after %v JWKS fetch(es)", rs,
			time.Since(start).Round(time.Millisecond), top.jwksFetches(t, rs)-fetchesBefore[i])
		top.wantMe(t, rs.base, old, c.ID) // the old key is still published (--keep 1)
	}

	// A flood of made-up kids: 16 concurrent callers per resource server
	// for 3 s.
	const length, workers = 3 * time.Second, 16
	for i, rs := range top.resource {
		fetchesBefore[i] = top.jwksFetches(t, rs)
	}
	statuses := map[int]int{}
	var mu sync.Mutex
	var sent atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, rs := range top.resource {
		for range workers {
			wg.Go(func() {
				for time.Since(start) < length {
					a := top.me(t, rs.base, junkToken(t, c.ID), nil)
					sent.Add(1)
					mu.Lock()
					statuses[a.status]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	// At most one on-demand start per interval, plus one scheduled refresh
	// the cache may run meanwhile.
	most := float64(elapsed/jwks.DefaultOnDemandInterval) + 2
	for i, rs := range top.resource {
		n := top.jwksFetches(t, rs) - fetchesBefore[i]
		t.Logf("%s: %v JWKS fetches during %v of made-up kids (at most %v allowed)", rs, n, elapsed.Round(time.Millisecond), most)
		if n > most {
			t.Errorf("%s: %v JWKS fetches in %v, want at most %v", rs, n, elapsed, most)
		}
	}
	t.Logf("%d tokens with made-up kids in %v: %v (status: count)", sent.Load(), elapsed.Round(time.Millisecond), statuses)
	if statuses[http.StatusUnauthorized] != int(sent.Load()) {
		t.Errorf("made-up kids: %v, want every one 401", statuses)
	}
	// The new key's tokens still work everywhere.
	for _, rs := range top.resource {
		top.wantMe(t, rs.base, tok, c.ID)
	}
}

// jwksFetches is the resource server's partnerapi_jwks_fetches_total,
// successes and failures, from its metrics listener.
func (top *topology) jwksFetches(t *testing.T, rs *server) float64 {
	t.Helper()
	a := top.get(t, "http://"+rs.metrics+"/metrics")
	if a.status != http.StatusOK {
		t.Fatalf("%s metrics: %d", rs, a.status)
	}
	var n float64
	for line := range strings.SplitSeq(string(a.body), "\n") {
		if strings.HasPrefix(line, "partnerapi_jwks_fetches_total{") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("metrics line %q", line)
			}
			n += v
		}
	}
	return n
}

// junkToken is a well-formed token for client id whose header names a
// random key id no key set holds (its signature is random bytes).
func junkToken(t *testing.T, id string) string {
	t.Helper()
	kid := make([]byte, 12)
	sig := make([]byte, 64)
	_, _ = rand.Read(kid)
	_, _ = rand.Read(sig)
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "EdDSA", "typ": "at+jwt", "kid": enc.EncodeToString(kid)})
	now := time.Now().Unix()
	p, _ := json.Marshal(map[string]any{"iss": "x", "sub": id, "client_id": id, "aud": audience, "iat": now, "exp": now + 3600,
		"jti": enc.EncodeToString(kid), "scope": "", "gen": 1})
	return "svc_at_" + enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "." + enc.EncodeToString(sig)
}
