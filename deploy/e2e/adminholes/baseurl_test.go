//go:build unix

package adminholes

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/dpop/dpoptest"
)

// TestPublicBaseURL (issue 59 point 8): with BASE_URL and ADMIN_BASE_URL
// at their defaults, a DPoP proof made for http://evil.example/api/v1/me/
// was accepted with `Host: evil.example`: htu followed the Host header.
// The public base URL is configuration now: the resource server checks
// htu against its --base-url, the admin API against its admin base URL
// (here http:// plus --admin-addr), and a proof for the URL a Host header
// names is refused 401 invalid_dpop_proof on both, while a proof for the
// configured URL is admitted. A resource server without --base-url, and a
// token service whose admin API listens on every interface without
// --admin-base-url, do not start: exit status 2 and the flag named.
func TestPublicBaseURL(t *testing.T) {
	s := startStack(t)
	key := dpoptest.NewKey()
	tokenProof := func() string {
		return key.Sign(dpoptest.Proof{Method: "POST", URI: s.issuer + "/api/v1/oauth/token/"})
	}
	const challenge = `DPoP error="invalid_dpop_proof", error_description="the DPoP proof's htu does not match the request's URI", algs="ES256 ES384 RS256 PS256 EdDSA Ed25519"`

	id, secret := s.credentials(t, "clients", "create", "--org", org, "--name", "Partner", "--audience", "pharma", "--scopes", "")
	tok := s.token(t, id, secret, tokenProof())
	me := func(host, htu string) answer {
		return s.call(t, "GET", s.api+"/api/v1/me/", nil, "Host", host, "Authorization", "DPoP "+tok,
			"DPoP", key.Sign(dpoptest.Proof{Method: "GET", URI: htu, AccessToken: tok}))
	}
	a := me("evil.example", "http://evil.example/api/v1/me/")
	if a.status != 401 || a.header.Get("WWW-Authenticate") != challenge {
		t.Errorf("partner API, proof for the Host header's URL: %d %q %s; want 401 with %s", a.status, a.header.Get("WWW-Authenticate"), a.body, challenge)
	}
	if a := me("evil.example", s.api+"/api/v1/me/"); a.status != 200 {
		t.Errorf("partner API, proof for BASE_URL, any Host: %d %s, want 200", a.status, a.body)
	}

	opID, opSecret := s.credentials(t, "operators", "create", "--name", "base-url")
	opTok := s.token(t, opID, opSecret, tokenProof())
	orgs := func(host, htu string) answer {
		return s.call(t, "GET", s.admin+"/admin/v1/orgs", nil, "Host", host, "Authorization", "DPoP "+opTok,
			"DPoP", key.Sign(dpoptest.Proof{Method: "GET", URI: htu, AccessToken: opTok}))
	}
	a = orgs("evil.example", "http://evil.example/admin/v1/orgs")
	wantProblem(t, "admin API, proof for the Host header's URL", a, 401, "invalid_dpop_proof", "the DPoP proof's htu does not match the request's URI")
	if a.header.Get("WWW-Authenticate") != challenge {
		t.Errorf("admin API challenge %q, want %q", a.header.Get("WWW-Authenticate"), challenge)
	}
	if a := orgs("evil.example", s.admin+"/admin/v1/orgs"); a.status != 200 {
		t.Errorf("admin API, proof for its base URL, any Host: %d %s, want 200", a.status, a.body)
	}

	// No public base URL to check proofs against: no start.
	keys := filepath.Join(s.Dir, "signing.json")
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"resourceserver without --base-url", []string{"resourceserver", "serve", "--addr", s.addr(t), "--metrics-addr", "off",
			"--jwks-url", s.issuer + "/.well-known/jwks.json", "--issuer", s.issuer, "--audience", audience},
			"--base-url (BASE_URL) is required: the public base URL partners call"},
		{"authserver, admin API on every interface, without --admin-base-url", []string{"authserver", "serve", "--addr", s.addr(t),
			"--metrics-addr", "off", "--admin-addr", ":" + strings.Split(s.addr(t), ":")[1], "--keys", keys, "--issuer", s.issuer},
			"--admin-base-url (ADMIN_BASE_URL) is required"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), e2etest.StartTimeout)
		cmd := exec.CommandContext(ctx, filepath.Join(s.Bin, c.args[0]), c.args[1:]...)
		cmd.Env = s.Env
		out, err := cmd.CombinedOutput()
		timedOut := ctx.Err() != nil
		cancel()
		var exit *exec.ExitError
		switch {
		case timedOut:
			t.Errorf("%s: still running after %v: it started without a public base URL", c.name, e2etest.StartTimeout)
		case !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), c.want):
			t.Errorf("%s: %v\n%s\nwant exit status 2 saying %q", c.name, err, out, c.want)
		}
	}
}
