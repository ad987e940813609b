//go:build unix

package clients

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

// debianPython is Debian's python3, which has python3-authlib and
// python3-requests (a pyenv python3 earlier on PATH has not).
const debianPython = "/usr/bin/python3"

// TestPythonAuthlib runs Authlib's OAuth2Session (python/client.py)
// against the real servers, with Authlib's PrivateKeyJWT as it comes
// (exp = iat + 3600, no override): tokens with private_key_jwt (RS256,
// Authlib's default algorithm, and ES256, from private JWKs with their kid;
// and a PKCS#8 PEM key, which Authlib signs without a kid, issue 27 point 9)
// and client_secret_post, /me, revoke_token, /me refused, a new token, a
// wrong key refused, and Authlib's default audience for a revocation
// request (the revocation endpoint's URL) refused.
func TestPythonAuthlib(t *testing.T) {
	t.Parallel()
	e2etest.RequireCommand(t, debianPython)
	if out, err := exec.Command(debianPython, "-c", "import authlib, requests").CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s has no authlib or requests (.ci/run installs python3-authlib python3-requests): %v\n%s", debianPython, err, out)
		}
		t.Skipf("%s has no authlib or requests (apt-get install python3-authlib python3-requests): %s", debianPython, out)
	}
	s := startStack(t)

	rs := newKey(t, "py-rs256", jwa.RS256())
	es := newKey(t, "py-es256", jwa.ES256())
	pem := newKey(t, "py-pem", jwa.RS256())
	wrong := newKey(t, es.KID, jwa.ES256()) // the registered kid, another key
	rsID := s.keyClient(t, "python rs256", rs)
	esID := s.keyClient(t, "python es256", es)
	pemID := s.keyClient(t, "python pem", pem)
	postID, postSecret := s.secretClient(t, "python post")
	keys := t.TempDir()
	dir := filepath.Join(e2etest.RepoRoot(t), "deploy", "e2e", "clients", "python")
	sc := runScript(t, "python authlib", map[string]any{
		"issuer": s.auth, "api": s.api,
		"clients": []map[string]any{
			{"name": "rs256", "client_id": rsID, "auth": "private_key_jwt", "jwk_file": privateJWKFile(t, rs, keys)},
			{"name": "es256", "client_id": esID, "auth": "private_key_jwt", "alg": "ES256", "jwk_file": privateJWKFile(t, es, keys), "wrong_jwk_file": privateJWKFile(t, wrong, keys)},
			{"name": "pem", "client_id": pemID, "auth": "private_key_jwt", "pem_file": privatePEMFile(t, pem, keys)},
			{"name": "post", "client_id": postID, "auth": "client_secret_post", "client_secret": postSecret},
		},
	}, dir, debianPython, "client.py")

	d := sc.want(t, "", "discovery", `{"step":"discovery","issuer":"`+s.auth+`","token_endpoint":"`+s.auth+pathToken+`",
		"revocation_endpoint":"`+s.auth+`/api/v1/oauth/revoke/"}`, "ms", "authlib", "requests")
	t.Logf("authlib %v, requests %v", d["authlib"], d["requests"])
	// What Authlib signs unchanged: exp an hour after iat; no kid from a PEM key.
	sc.want(t, "rs256", "assertion", `{"client":"rs256","step":"assertion","alg":"RS256","kid":"py-rs256","lifetime":3600}`)
	sc.want(t, "es256", "assertion", `{"client":"es256","step":"assertion","alg":"ES256","kid":"py-es256","lifetime":3600}`)
	sc.want(t, "pem", "assertion", `{"client":"pem","step":"assertion","alg":"RS256","kid":null,"lifetime":3600}`)
	for _, c := range []struct{ name, id, display string }{
		{"rs256", rsID, "python rs256"}, {"es256", esID, "python es256"}, {"pem", pemID, "python pem"}, {"post", postID, "python post"},
	} {
		tok := sc.want(t, c.name, "token", `{"client":"`+c.name+`","step":"token","token_type":"Bearer","expires_in":3600,"scope":"`+scope+`"}`, "access_token")
		sc.wantMeLine(t, c.name, c.id, c.display, `{"client":"`+c.name+`","step":"me","status":200,"www_authenticate":null,"cache_control":"no-store"}`)
		sc.want(t, c.name, "revoke", `{"client":"`+c.name+`","step":"revoke","status":200,"cache_control":"no-store","body":""}`)
		sc.want(t, c.name, "me_after_revoke", `{"client":"`+c.name+`","step":"me_after_revoke","status":401,
			"www_authenticate":"Bearer realm=\"api\", error=\"invalid_token\"","cache_control":"no-store",
			"body":`+bodyInvalidToken+`}`)
		sc.want(t, c.name, "me_new_token", `{"client":"`+c.name+`","step":"me_new_token","status":200,"new_token":true}`)
		sc.step(t, c.name, "done")
		access, _ := tok["access_token"].(string)
		if !strings.HasPrefix(access, "svc_at_") {
			t.Fatalf("%s: access token %q", c.name, access)
		}
		wantRefused(t, c.name+": the revoked token at /me", s.me(t, access))
	}
	sc.want(t, "es256", "token_wrong_key", `{"client":"es256","step":"token_wrong_key","error":"invalid_client","error_description":"Client authentication failed"}`)
	// The token service takes its issuer or its token endpoint's URL as
	// "aud", never another endpoint's (RFC 7523 section 3, point 3).
	sc.want(t, "es256", "revoke_aud_revocation_url", `{"client":"es256","step":"revoke_aud_revocation_url","status":401,"body":`+bodyInvalidClient+`}`)
	t.Logf("python authlib: %d clients in %v", 4, sc.took.Round(time.Millisecond))
}
