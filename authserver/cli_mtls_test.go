package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestMTLSClientsCLI: `clients create --auth tls_client_auth` registers one
// certificate name, `--auth self_signed_tls_client_auth` a key set; both
// get no secret; a registration's problems are listed at once.
func TestMTLSClientsCLI(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	env := map[string]string{"REDIS_URL": redisURL(t, rdb), "REDIS_KEY_PREFIX": redistest.Prefix(t, rdb)}
	if _, stderr, code := execAuthserver(t, env, "orgs", "create", "--slug", "tls", "--name", "TLS", "--environment", "live"); code != 0 {
		t.Fatalf("orgs create: %d %s", code, stderr)
	}
	base := []string{"clients", "create", "--org", "tls", "--name", "Ward", "--audience", "hospital", "--scopes", "patients.read"}
	stdout, stderr, code := execAuthserver(t, env, append(base, "--auth", "tls_client_auth", "--tls-san-dns", "ward.example", "--json")...)
	var c map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &c) != nil || c["auth_method"] != "tls_client_auth" || c["tls_client_auth_san_dns"] != "ward.example" || c["client_secret"] != nil {
		t.Fatalf("create tls_client_auth: exit %d %q %q", code, stdout, stderr)
	}
	// Its certificate name changes in place; keys are refused for it.
	id := c["client_id"].(string)
	stdout, stderr, code = execAuthserver(t, env, "clients", "rotate-keys", id, "--tls-subject-dn", "CN=ward2.example,O=St Elsewhere", "--json")
	c = nil
	if code != 0 || json.Unmarshal([]byte(stdout), &c) != nil || c["tls_client_auth_subject_dn"] != "CN=ward2.example,O=St Elsewhere" || c["tls_client_auth_san_dns"] != nil || c["keys_version"] != float64(2) {
		t.Fatalf("rotate-keys --tls-subject-dn: exit %d %q %q", code, stdout, stderr)
	}
	if stdout, _, code := execAuthserver(t, env, "clients", "rotate-keys", id, "--tls-san-uri", "urn:ward:3"); code != 0 ||
		!strings.HasPrefix(stdout, "changed the certificate name of client "+id+": certificates under the old name and every token issued before are dead\n") ||
		!strings.Contains(stdout, "  certificate     tls_client_auth_san_uri urn:ward:3\n") {
		t.Fatalf("rotate-keys --tls-san-uri: exit %d %q", code, stdout)
	}
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(jwks, clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "lab"}).JWKS(t, "tls"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = execAuthserver(t, env, append(base, "--auth", "self_signed_tls_client_auth", "--jwks-file", jwks)...)
	if code != 0 || !strings.Contains(stdout, "self_signed_tls_client_auth (its mutual-TLS client certificate; no secret)") {
		t.Fatalf("create self_signed_tls_client_auth: exit %d %q %q", code, stdout, stderr)
	}
	_, stderr, code = execAuthserver(t, env, "clients", "create", "--org", "tls", "--name", "", "--audience", "hospital", "--scopes", "patients.read",
		"--auth", "tls_client_auth", "--jwks-file", jwks)
	for _, want := range []string{"name: 1-200 characters required", "keys (jwks, jwks_uri): only for private_key_jwt and self_signed_tls_client_auth, not tls_client_auth",
		"a tls_client_auth client needs exactly one of"} {
		if code == 0 || !strings.Contains(stderr, want) {
			t.Errorf("problems: exit %d, stderr %q lacks %q", code, stderr, want)
		}
	}
	if _, stderr, code := execAuthserver(t, env, append(base, "--auth", "tls_client_auth", "--tls-san-dns", "a.example", "--tls-san-ip", "192.0.2.1")...); code != 2 || !strings.Contains(stderr, "not 2") {
		t.Errorf("two subjects: exit %d %q", code, stderr)
	}
	if _, stderr, code := execAuthserver(t, env, "clients", "rotate-keys", id, "--tls-san-dns", "a.example", "--jwks-file", jwks); code != 2 ||
		!strings.Contains(stderr, "give a certificate name (--tls-*, tls_client_auth) or keys (--jwks-file, --jwks-url), not both") {
		t.Errorf("rotate-keys with a name and keys: exit %d %q", code, stderr)
	}
	if _, stderr, code := execAuthserver(t, env, "clients", "rotate-keys", id, "--jwks-file", jwks); code == 0 ||
		!strings.Contains(stderr, "change its certificate name (rotate-keys with a tls_client_auth_* name)") {
		t.Errorf("rotate-keys with keys for a tls_client_auth client: exit %d %q", code, stderr)
	}
}
