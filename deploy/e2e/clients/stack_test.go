//go:build unix

package clients

import (
	"bufio"
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

const (
	audience  = "partner-api"
	org       = "acme"
	orgName   = "Acme Hospital"
	pathToken = "/api/v1/oauth/token/"
	pathMe    = "/api/v1/me/"
	scope     = "patients.read"
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// stack is the token service and the resource server, each a process of
// the real binary, and the CLI's environment.
type stack struct {
	*e2etest.Servers
	auth string // the token service's base URL, also its issuer
	api  string // the resource server's base URL
	hc   *http.Client
}

// startStack starts both servers on the real Redis under a key prefix of
// the test's own, with organisation "acme".
func startStack(t *testing.T) *stack {
	t.Helper()
	return startStackWith(t)
}

// startStackWith is startStack with more environment for both servers
// and the CLI (as DPOP_NONCES=true).
func startStackWith(t *testing.T, env ...string) *stack {
	t.Helper()
	s := &stack{Servers: e2etest.PrepareServers(t, env...), hc: &http.Client{Timeout: 10 * time.Second}}
	keys := filepath.Join(s.Dir, "signing.json")
	s.CLI(t, "keys", "generate", "--out", keys)
	s.CLI(t, "orgs", "create", "--slug", org, "--name", orgName, "--environment", "live")

	authAddr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	apiAddr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	s.auth, s.api = "http://"+authAddr, "http://"+apiAddr
	free := func() string { return "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) }
	auth := e2etest.StartProcess(t, "authserver", s.Env, filepath.Join(s.Bin, "authserver"), "serve",
		"--addr", authAddr, "--metrics-addr", free(), "--admin-addr", free(), "--keys", keys, "--issuer", s.auth, "--audience", audience)
	e2etest.WaitOK(t, s.auth+"/readyz", auth)
	res := e2etest.StartProcess(t, "resourceserver", s.Env, filepath.Join(s.Bin, "resourceserver"), "serve",
		"--addr", apiAddr, "--metrics-addr", free(), "--jwks-url", s.auth+"/.well-known/jwks.json", "--issuer", s.auth, "--audience", audience,
		"--base-url", s.api)
	e2etest.WaitOK(t, s.api+"/readyz", res, auth)
	return s
}

// cliJSON runs `authserver args... --json` and decodes its output.
func (s *stack) cliJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out := s.CLI(t, append(args, "--json")...)
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("authserver %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v
}

// secretClient creates a client_secret client and returns its id and secret.
func (s *stack) secretClient(t *testing.T, name string) (string, string) {
	t.Helper()
	c := s.cliJSON(t, "clients", "create", "--org", org, "--name", name, "--audience", "hospital", "--scopes", scope)
	id, _ := c["client_id"].(string)
	secret, _ := c["client_secret"].(string)
	if id == "" || !strings.HasPrefix(secret, "svc_cs_") || c["auth_method"] != "client_secret" {
		t.Fatalf("clients create: %v", c)
	}
	return id, secret
}

// keyClient creates a private_key_jwt client with the public keys of keys
// and returns its id.
func (s *stack) keyClient(t *testing.T, name string, keys ...partnerKey) string {
	t.Helper()
	c := s.cliJSON(t, "clients", "create", "--org", org, "--name", name, "--audience", "hospital", "--scopes", scope,
		"--auth", "private_key_jwt", "--jwks-file", s.jwksFile(t, keys...))
	id, _ := c["client_id"].(string)
	if id == "" || c["auth_method"] != "private_key_jwt" || c["client_secret"] != nil || !reflect.DeepEqual(c["secrets"], []any{}) {
		t.Fatalf("clients create --auth private_key_jwt: %v", c)
	}
	return id
}

// jwksFile writes the public JWK set of keys to a new file.
func (s *stack) jwksFile(t *testing.T, keys ...partnerKey) string {
	t.Helper()
	f, err := os.CreateTemp(s.Dir, "public-*.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(assertiontest.JWKS(t, keys...)); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// partnerKey is a partner's key pair (pkg/clients/assertiontest): the
// private key signs assertions, the public JWK is registered with the CLI.
type partnerKey = assertiontest.Key

func newKey(t *testing.T, kid string, alg jwa.SignatureAlgorithm) partnerKey {
	return assertiontest.NewKey(t, kid, alg)
}

// privateJWK is the private JWK of k with its kid and alg (RFC 7517).
func privateJWK(t *testing.T, k partnerKey) []byte {
	t.Helper()
	key, err := jwk.Import(k.Signer)
	if err != nil {
		t.Fatal(err)
	}
	_ = key.Set(jwk.KeyIDKey, k.KID)
	_ = key.Set(jwk.AlgorithmKey, k.Alg.String())
	b, err := json.Marshal(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// privateJWKFile writes k's private JWK to a file of dir.
func privateJWKFile(t *testing.T, k partnerKey, dir string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "private-*.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(privateJWK(t, k)); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// privatePEMFile writes k's private key to a file of dir as PKCS#8 PEM
// ("PRIVATE KEY"), what `openssl genpkey` writes (the authentication
// guide's recipe): no kid, no alg.
func privatePEMFile(t *testing.T, k partnerKey, dir string) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k.Signer)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.CreateTemp(dir, "private-*.pem")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// assertion is a client assertion of client id for the token service
// (RFC 7523 section 3): aud its issuer, exp a minute ahead, a fresh jti.
func (s *stack) assertion(t *testing.T, k partnerKey, id string) string {
	t.Helper()
	return k.Assertion(t, id, s.auth)
}

// answer is an HTTP answer, its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (s *stack) do(t *testing.T, method, url, body string, mods ...func(*http.Request)) answer {
	t.Helper()
	a := e2etest.Do(t, s.hc, method, url, body, mods...)
	return answer{a.Status, a.Header, a.Body}
}

// token asks for a token with the client authentication in form and mods;
// it returns the answer and the access token of a 200.
func (s *stack) token(t *testing.T, form string, mods ...func(*http.Request)) (answer, string) {
	t.Helper()
	a := s.do(t, http.MethodPost, s.auth+pathToken, form, mods...)
	var v struct {
		AccessToken string `json:"access_token"`
	}
	if a.status == http.StatusOK {
		if err := json.Unmarshal(a.body, &v); err != nil || !strings.HasPrefix(v.AccessToken, "svc_at_") {
			t.Fatalf("token answer %s (%v)", a.body, err)
		}
	}
	return a, v.AccessToken
}

// basicToken gets a token with HTTP Basic, failing the test unless 200.
func (s *stack) basicToken(t *testing.T, id, secret string) string {
	t.Helper()
	a, tok := s.token(t, e2etest.Form("grant_type", "client_credentials"), e2etest.Basic(id, secret))
	wantStatus(t, "token with Basic", a, http.StatusOK)
	return tok
}

// keyToken gets a token with a client assertion signed by k, failing the
// test unless 200.
func (s *stack) keyToken(t *testing.T, k partnerKey, id string) string {
	t.Helper()
	a, tok := s.token(t, assertionForm(s.assertion(t, k, id)))
	wantStatus(t, "token with an assertion by "+k.KID, a, http.StatusOK)
	return tok
}

func assertionForm(assertion string) string {
	return e2etest.Form("grant_type", "client_credentials",
		"client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer", "client_assertion", assertion)
}

func (s *stack) me(t *testing.T, token string) answer {
	t.Helper()
	return s.do(t, http.MethodGet, s.api+pathMe, "", e2etest.Bearer(token))
}

// Exact bodies of the refusals.
const (
	bodyInvalidClient = `{"error":"invalid_client","error_description":"Client authentication failed"}`
	bodyInvalidToken  = `{"detail":"invalid, expired or revoked access token"}`
	challengeInvalid  = `Bearer realm="api", error="invalid_token"`
)

func wantStatus(t *testing.T, what string, a answer, want int) {
	t.Helper()
	if a.status != want {
		t.Fatalf("%s: status %d, want %d; body %s", what, a.status, want, a.body)
	}
}

// wantRefused checks the exact 401 of /api/v1/me/ for a dead token.
func wantRefused(t *testing.T, what string, a answer) {
	t.Helper()
	wantStatus(t, what, a, http.StatusUnauthorized)
	if got := a.header.Get("WWW-Authenticate"); got != challengeInvalid || string(a.body) != bodyInvalidToken {
		t.Fatalf("%s: WWW-Authenticate %q, body %s; want %q, %s", what, got, a.body, challengeInvalid, bodyInvalidToken)
	}
}

// wantInvalidClient checks the exact 401 of the token endpoint for a
// client that failed to authenticate.
func wantInvalidClient(t *testing.T, what string, a answer) {
	t.Helper()
	wantStatus(t, what, a, http.StatusUnauthorized)
	if string(a.body) != bodyInvalidClient {
		t.Fatalf("%s: body %s, want %s", what, a.body, bodyInvalidClient)
	}
}

// wantMe checks a 200 of /api/v1/me/ for client id (named name).
func wantMe(t *testing.T, what string, a answer, id, name string) {
	t.Helper()
	wantStatus(t, what, a, http.StatusOK)
	var got map[string]any
	if err := json.Unmarshal(a.body, &got); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := checkMeBody(got, id, name); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkMeBody compares a /api/v1/me/ body with what client id (named name)
// must see: token_expires_at an hour ahead, the rest exactly.
func checkMeBody(got map[string]any, id, name string) error {
	exp, _ := got["token_expires_at"].(string)
	at, err := time.Parse(time.RFC3339, exp)
	if err != nil || at.Before(time.Now().Add(59*time.Minute)) || at.After(time.Now().Add(61*time.Minute)) {
		return fmt.Errorf("token_expires_at %q: not an hour ahead", exp)
	}
	want := map[string]any{
		"api_version": "1", "client_id": id, "name": name, "audience": "hospital",
		"organization": map[string]any{"name": orgName, "slug": org}, "environment": "live",
		"scopes": []any{scope}, "token_expires_at": exp, "rate_limit_per_minute": float64(120),
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("body %v, want %v", got, want)
	}
	return nil
}

// script is what a client script printed: one JSON object a line.
type script struct {
	lines []map[string]any
	took  time.Duration
}

// runScript runs a client script with a config file and parses its lines,
// logging them (access tokens shortened) and the time it took.
func runScript(t *testing.T, name string, config any, dir string, bin string, args ...string) script {
	t.Helper()
	cfg, _ := json.Marshal(config)
	cfgFile := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgFile, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(args, cfgFile)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NODE_NO_WARNINGS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	sc := script{took: time.Since(start)}
	logged := shortTokens.ReplaceAllString(string(out), `svc_at_…`)
	t.Logf("%s output (%v):\n%s", name, sc.took.Round(time.Millisecond), logged)
	if err != nil {
		t.Fatalf("%s: %v\nstderr: %s", name, err, stderr.String())
	}
	sl := bufio.NewScanner(bytes.NewReader(out))
	sl.Buffer(nil, 1<<20)
	for sl.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sl.Bytes(), &line); err != nil {
			t.Fatalf("%s: not a JSON line: %q", name, sl.Text())
		}
		sc.lines = append(sc.lines, line)
	}
	return sc
}

var shortTokens = regexp.MustCompile(`svc_at_[A-Za-z0-9_.-]+`)

// step returns the line of client's step, failing the test if there is
// not exactly one.
func (sc script) step(t *testing.T, client, step string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, l := range sc.lines {
		if l["step"] == step && (client == "" || l["client"] == client) {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d lines of client %q step %q, want 1", len(found), client, step)
	}
	return found[0]
}

// want compares client's step line, without the keys in skip, with want
// (JSON).
func (sc script) want(t *testing.T, client, step, want string, skip ...string) map[string]any {
	t.Helper()
	got := sc.step(t, client, step)
	trimmed := map[string]any{}
	for k, v := range got {
		trimmed[k] = v
	}
	for _, k := range skip {
		delete(trimmed, k)
	}
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	if !reflect.DeepEqual(trimmed, w) {
		g, _ := json.Marshal(trimmed)
		t.Fatalf("client %q step %q:\n got %s\nwant %s", client, step, g, want)
	}
	return got
}

// wantMeLine checks a script's "me" line: 200 with the exact body.
func (sc script) wantMeLine(t *testing.T, client, id, name, want string) {
	t.Helper()
	l := sc.want(t, client, "me", want, "body")
	body, _ := l["body"].(map[string]any)
	if err := checkMeBody(body, id, name); err != nil {
		t.Fatalf("client %q step me: %v", client, err)
	}
}
