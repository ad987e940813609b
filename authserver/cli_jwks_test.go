package main

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestJWKSURLRegistration (issue 27 point 5): `clients create` and
// `clients rotate-keys` refuse a --jwks-url whose host resolves to an
// address the token service would not fetch from, saying which and why,
// unless JWKS_URL_ALLOW_PRIVATE=true.
func TestJWKSURLRegistration(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	env := map[string]string{"REDIS_URL": redisURL(t, rdb), "REDIS_KEY_PREFIX": prefix}
	private := maps.Clone(env)
	private["JWKS_URL_ALLOW_PRIVATE"] = "true"
	if _, stderr, code := execAuthserver(t, env, "orgs", "create", "--slug", "uris", "--name", "URIs", "--environment", "live"); code != 0 {
		t.Fatalf("orgs create: %d %s", code, stderr)
	}
	create := func(env map[string]string, uri string) (string, string, int) {
		return execAuthserver(t, env, "clients", "create", "--org", "uris", "--name", "EHR", "--audience", "pharma", "--scopes", "events.subscribe",
			"--auth", "private_key_jwt", "--jwks-url", uri, "--json")
	}
	for uri, why := range map[string]string{
		"https://127.0.0.1:8443/jwks.json":  "address 127.0.0.1 is loopback",
		"https://localhost/jwks.json":       "is loopback",
		"https://[::ffff:10.1.2.3]/k":       "address 10.1.2.3 is private-use (RFC 1918)",
		"https://[2002:7f00:1::1]/k":        "6to4 of 127.0.0.1",
		"https://198.18.0.1/jwks.json":      "benchmarking (RFC 2544)",
		"https://no-such-host.invalid/keys": "does not resolve",
	} {
		stdout, stderr, code := create(env, uri)
		if code == 0 || stdout != "" || !strings.Contains(stderr, why) || !strings.Contains(stderr, uri) {
			t.Errorf("create --jwks-url %s: exit %d, stdout %q, stderr %q; want a refusal saying %q", uri, code, stdout, stderr, why)
		}
	}
	stdout, stderr, code := create(private, "https://127.0.0.1:8443/jwks.json")
	if code != 0 {
		t.Fatalf("JWKS_URL_ALLOW_PRIVATE=true: exit %d %s", code, stderr)
	}
	var c struct {
		ID string `json:"client_id"`
	}
	if err := json.Unmarshal([]byte(stdout), &c); err != nil || c.ID == "" {
		t.Fatalf("create --json: %q %v", stdout, err)
	}
	id := c.ID
	if _, stderr, code := execAuthserver(t, env, "clients", "rotate-keys", id, "--jwks-url", "https://10.0.0.1/jwks.json"); code == 0 || !strings.Contains(stderr, "private-use") {
		t.Errorf("rotate-keys to a private address: exit %d %s", code, stderr)
	}
	if _, stderr, code := execAuthserver(t, private, "clients", "rotate-keys", id, "--jwks-url", "https://10.0.0.1/jwks.json"); code != 0 {
		t.Errorf("rotate-keys to a private address, allowed: exit %d %s", code, stderr)
	}
}
