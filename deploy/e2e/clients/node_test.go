//go:build unix

package clients

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

// TestNodeOAuth4WebAPI runs oauth4webapi (node/client.mjs) against the
// real servers: discovery, tokens with private_key_jwt (ES256 and Ed25519
// from private JWKs with their kid, and ES256 from a PKCS#8 PEM key as the
// authentication guide makes it, signed without a kid; oauth4webapi's
// PrivateKeyJwt as it comes) and client_secret_basic, /me, revocation, /me
// refused, a new token, and a wrong key refused.
func TestNodeOAuth4WebAPI(t *testing.T) {
	t.Parallel()
	e2etest.RequireCommand(t, "node")
	e2etest.RequireCommand(t, "npm")
	s := startStack(t)
	dir := npmCI(t)

	es := newKey(t, "node-es256", jwa.ES256())
	ed := newKey(t, "node-ed25519", jwa.EdDSA())
	pem := newKey(t, "node-pem", jwa.ES256())
	wrong := newKey(t, es.KID, jwa.ES256()) // the registered kid, another key
	esID := s.keyClient(t, "node es256", es)
	edID := s.keyClient(t, "node ed25519", ed)
	pemID := s.keyClient(t, "node pem", pem)
	basicID, basicSecret := s.secretClient(t, "node basic")
	keys := t.TempDir()
	sc := runScript(t, "node oauth4webapi", map[string]any{
		"issuer": s.auth, "api": s.api,
		"clients": []map[string]any{
			{"name": "es256", "client_id": esID, "auth": "private_key_jwt", "jwk_file": privateJWKFile(t, es, keys), "wrong_jwk_file": privateJWKFile(t, wrong, keys)},
			{"name": "ed25519", "client_id": edID, "auth": "private_key_jwt", "jwk_file": privateJWKFile(t, ed, keys)},
			{"name": "pem", "client_id": pemID, "auth": "private_key_jwt", "alg": "ES256", "pem_file": privatePEMFile(t, pem, keys)},
			{"name": "basic", "client_id": basicID, "auth": "client_secret_basic", "client_secret": basicSecret},
		},
	}, dir, "node", "client.mjs")

	sc.want(t, "", "discovery", `{"step":"discovery","issuer":"`+s.auth+`","token_endpoint":"`+s.auth+pathToken+`",
		"revocation_endpoint":"`+s.auth+`/api/v1/oauth/revoke/",
		"token_endpoint_auth_methods_supported":["client_secret_basic","client_secret_post","private_key_jwt"]}`, "ms")
	// What oauth4webapi signs unchanged: exp a minute after iat; no kid
	// for a key imported without one.
	sc.want(t, "es256", "assertion", `{"client":"es256","step":"assertion","alg":"ES256","kid":"node-es256","lifetime":60}`)
	sc.want(t, "ed25519", "assertion", `{"client":"ed25519","step":"assertion","alg":"Ed25519","kid":"node-ed25519","lifetime":60}`)
	sc.want(t, "pem", "assertion", `{"client":"pem","step":"assertion","alg":"ES256","kid":null,"lifetime":60}`)
	for _, c := range []struct{ name, id, display string }{
		{"es256", esID, "node es256"}, {"ed25519", edID, "node ed25519"}, {"pem", pemID, "node pem"}, {"basic", basicID, "node basic"},
	} {
		tok := sc.want(t, c.name, "token", `{"client":"`+c.name+`","step":"token","token_type":"bearer","expires_in":3600,"scope":"`+scope+`"}`, "access_token")
		sc.wantMeLine(t, c.name, c.id, c.display, `{"client":"`+c.name+`","step":"me","status":200,"challenges":null,"www_authenticate":null,"cache_control":"no-store"}`)
		sc.want(t, c.name, "revoke", `{"client":"`+c.name+`","step":"revoke","status":200,"cache_control":"no-store"}`)
		sc.want(t, c.name, "me_after_revoke", `{"client":"`+c.name+`","step":"me_after_revoke","status":401,
			"challenges":[{"scheme":"bearer","parameters":{"realm":"api","error":"invalid_token"}}],
			"www_authenticate":"Bearer realm=\"api\", error=\"invalid_token\"","cache_control":"no-store",
			"body":`+bodyInvalidToken+`}`)
		sc.want(t, c.name, "me_new_token", `{"client":"`+c.name+`","step":"me_new_token","status":200,"new_token":true}`)
		sc.step(t, c.name, "done")
		// On the wire, from here: the revoked token stays dead.
		access, _ := tok["access_token"].(string)
		if !strings.HasPrefix(access, "svc_at_") {
			t.Fatalf("%s: access token %q", c.name, access)
		}
		wantRefused(t, c.name+": the revoked token at /me", s.me(t, access))
	}
	sc.want(t, "es256", "token_wrong_key", `{"client":"es256","step":"token_wrong_key","status":401,"error":"invalid_client","error_description":"Client authentication failed"}`)
	t.Logf("node oauth4webapi: %d clients in %v", 4, sc.took.Round(time.Millisecond))
}

// npmCI returns a directory holding client.mjs and the exact packages of
// node/package-lock.json. They are installed once with `npm ci` into a
// cache keyed by the hash of package.json and package-lock.json, under
// os.UserCacheDir (so a second run, or another checkout of the same lock
// file, skips npm), and the directory links node_modules from there.
func npmCI(t *testing.T) string {
	t.Helper()
	src := filepath.Join(e2etest.RepoRoot(t), "deploy", "e2e", "clients", "node")
	modules := npmCached(t, src)
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(src, "client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// npmCached returns the node_modules directory of the cache entry of src's
// package.json and package-lock.json, running `npm ci` into a fresh
// directory and renaming it into place when there is none (atomic, so
// concurrent runs at worst install twice).
func npmCached(t *testing.T, src string) string {
	t.Helper()
	h := sha256.New()
	files := map[string][]byte{}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	root := e2etest.CacheDir("npm")
	entry := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:32])
	modules := filepath.Join(entry, "node_modules")
	if _, err := os.Stat(modules); err == nil {
		t.Logf("npm ci: cached in %s", entry)
		return modules
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(root, "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	cmd.Dir = tmp
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, entry); err != nil {
		if _, statErr := os.Stat(modules); statErr != nil {
			t.Fatalf("npm ci: %v", err)
		}
		// Another run installed the same lock file first.
	}
	t.Logf("npm ci: %v, cached in %s", time.Since(start).Round(time.Millisecond), entry)
	return modules
}

// TestNodeOAuth4WebAPIDPoP runs oauth4webapi's DPoP flow (RFC 9449;
// node/client.mjs, runDPoP) against the real servers: a DPoP-bound token
// (token_type DPoP) with a proof, and GET /api/v1/me/ twice with proofs.
// With DPOP_NONCES=true on both servers, the first token request and the
// first /me are refused use_dpop_nonce and retried once with the nonce the
// library kept (RFC 9449 sections 8 and 9); the second /me needs no retry.
func TestNodeOAuth4WebAPIDPoP(t *testing.T) {
	t.Parallel()
	e2etest.RequireCommand(t, "node")
	e2etest.RequireCommand(t, "npm")
	dir := npmCI(t)
	for _, c := range []struct {
		name    string
		env     []string
		retries string // of the token request and the first /me
		nonce   string // whether /me answers carry DPoP-Nonce
	}{
		{"nonces off", nil, "0", "false"},
		{"nonces on", []string{"DPOP_NONCES=true"}, "1", "true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startStackWith(t, c.env...)
			id, secret := s.secretClient(t, "node dpop")
			sc := runScript(t, "node oauth4webapi DPoP", map[string]any{
				"issuer": s.auth, "api": s.api, "dpop": true,
				"clients": []map[string]any{{"name": "dpop", "client_id": id, "auth": "client_secret_basic", "client_secret": secret}},
			}, dir, "node", "client.mjs")
			sc.want(t, "", "discovery", `{"step":"discovery","dpop_signing_alg_values_supported":["ES256","ES384","RS256","PS256","EdDSA","Ed25519"]}`)
			sc.want(t, "dpop", "dpop_token", `{"client":"dpop","step":"dpop_token","token_type":"dpop","expires_in":3600,"scope":"`+scope+`","nonce_retries":`+c.retries+`}`)
			sc.want(t, "dpop", "dpop_me", `{"client":"dpop","step":"dpop_me","status":200,"client_id":"`+id+`","nonce":`+c.nonce+`,"nonce_retries":`+c.retries+`}`)
			sc.want(t, "dpop", "dpop_me_again", `{"client":"dpop","step":"dpop_me_again","status":200,"client_id":"`+id+`","nonce":`+c.nonce+`,"nonce_retries":0}`)
		})
	}
}
