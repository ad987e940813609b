//go:build unix

package tokenholes

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
	formType  = "application/x-www-form-urlencoded"
	jsonType  = "application/json"
	scope     = "patients.read"

	assertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

	bodyInvalidClient = `{"error":"invalid_client","error_description":"Client authentication failed"}`
	bodyBudgetSpent   = `{"error":"slow_down","error_description":"Too many failed client authentications from this address; retry after the number of seconds in Retry-After"}`
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// The ports this suite may listen on, handed out in turn (a port is used
// again once the test that had it has ended and it is free).
const portLow, portHigh = 18100, 18200

var ports struct {
	mu   sync.Mutex
	next int
}

// port returns a free port of 18100-18199.
func port(t *testing.T) int {
	t.Helper()
	ports.mu.Lock()
	defer ports.mu.Unlock()
	for range portHigh - portLow {
		p := portLow + ports.next
		ports.next = (ports.next + 1) % (portHigh - portLow)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			_ = l.Close()
			return p
		}
	}
	t.Fatalf("no free port in %d-%d", portLow, portHigh-1)
	return 0
}

func addrOf(t *testing.T) string { return "127.0.0.1:" + strconv.Itoa(port(t)) }

// stack is the token service and, when started, the resource server, each
// a process of the real binary, and the CLI's environment.
type stack struct {
	*e2etest.Servers
	keys string // the signing keys file
	// auth is the token service's base URL, also its issuer; api the
	// resource server's; apiMetrics the resource server's metrics URL.
	auth, api, apiMetrics string
	authProc, apiProc     *e2etest.Process
	hc                    *http.Client
}

// prepare builds the binaries and makes the environment, the signing keys
// and organisation "acme"; it starts no server.
func prepare(t *testing.T) *stack {
	t.Helper()
	s := &stack{Servers: e2etest.PrepareServers(t), hc: &http.Client{Timeout: 10 * time.Second}}
	s.keys = filepath.Join(s.Dir, "signing.json")
	s.CLI(t, "keys", "generate", "--out", s.keys)
	s.CLI(t, "orgs", "create", "--slug", org, "--name", orgName, "--environment", "live")
	s.auth = "http://" + addrOf(t)
	return s
}

// startStack starts the token service and the resource server, each
// waited for.
func startStack(t *testing.T) *stack {
	t.Helper()
	s := prepare(t)
	s.startAuth(t)
	s.startAPI(t)
	e2etest.WaitOK(t, s.api+"/readyz", s.apiProc, s.authProc)
	return s
}

// startAuth starts the token service at s.auth and waits for it.
func (s *stack) startAuth(t *testing.T) {
	t.Helper()
	s.authProc = e2etest.StartProcess(t, "authserver", s.Env, filepath.Join(s.Bin, "authserver"), "serve",
		"--addr", strings.TrimPrefix(s.auth, "http://"), "--metrics-addr", addrOf(t), "--admin-addr", addrOf(t),
		"--keys", s.keys, "--issuer", s.auth, "--audience", audience)
	e2etest.WaitOK(t, s.auth+"/readyz", s.authProc)
}

// startAPI starts the resource server, its JWKS the token service's at
// s.auth, and waits for its /healthz (which asks nothing of the keys).
func (s *stack) startAPI(t *testing.T) {
	t.Helper()
	api, metrics := addrOf(t), addrOf(t)
	s.api, s.apiMetrics = "http://"+api, "http://"+metrics+"/metrics"
	s.apiProc = e2etest.StartProcess(t, "resourceserver", s.Env, filepath.Join(s.Bin, "resourceserver"), "serve",
		"--addr", api, "--metrics-addr", metrics, "--jwks-url", s.auth+"/.well-known/jwks.json", "--issuer", s.auth, "--audience", audience,
		"--base-url", s.api)
	e2etest.WaitOK(t, s.api+"/healthz", s.apiProc)
}

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
	if id == "" || !strings.HasPrefix(secret, "svc_cs_") {
		t.Fatalf("clients create: %v", c)
	}
	return id, secret
}

// keyClient creates a private_key_jwt client registered with the JWK set
// doc and returns its id.
func (s *stack) keyClient(t *testing.T, name string, doc []byte) string {
	t.Helper()
	f := filepath.Join(s.Dir, name+".jwks.json")
	if err := os.WriteFile(f, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	c := s.cliJSON(t, "clients", "create", "--org", org, "--name", name, "--audience", "hospital", "--scopes", scope,
		"--auth", "private_key_jwt", "--jwks-file", f)
	id, _ := c["client_id"].(string)
	if id == "" || c["auth_method"] != "private_key_jwt" {
		t.Fatalf("clients create --auth private_key_jwt: %v", c)
	}
	return id
}

// from is an HTTP client whose connections leave from the loopback
// address ip (127.0.0.0/8 is all local on Linux): the token service, with
// no trusted proxy, counts its requests under that address.
func from(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 16}}
}

// answer is an HTTP answer, its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, a.body) }

// post sends a POST of body (contentType) with hc.
func post(t *testing.T, hc *http.Client, url, contentType, body string, mods ...func(*http.Request)) answer {
	t.Helper()
	a, err := tryPost(hc, url, contentType, body, mods...)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return a
}

func tryPost(hc *http.Client, url, contentType, body string, mods ...func(*http.Request)) (answer, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", contentType)
	for _, m := range mods {
		m(req)
	}
	return do(hc, req)
}

func get(t *testing.T, hc *http.Client, url string, mods ...func(*http.Request)) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		m(req)
	}
	a, err := do(hc, req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return a
}

func do(hc *http.Client, req *http.Request) (answer, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{resp.StatusCode, resp.Header, b}, nil
}

// grant is the minimal token request body.
var grant = e2etest.Form("grant_type", "client_credentials")

func assertionForm(assertion string) string {
	return e2etest.Form("grant_type", "client_credentials", "client_assertion_type", assertionType, "client_assertion", assertion)
}

// accessToken returns the access token of a 200 token answer of type typ.
func accessToken(t *testing.T, what string, a answer, typ string) string {
	t.Helper()
	var v struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &v) != nil || !strings.HasPrefix(v.AccessToken, "svc_at_") || v.TokenType != typ {
		t.Fatalf("%s: %v, want a %s token", what, a, typ)
	}
	return v.AccessToken
}

// wantAnswer checks an answer's status and exact body.
func wantAnswer(t *testing.T, what string, a answer, status int, body string) {
	t.Helper()
	if a.status != status || string(a.body) != body {
		t.Fatalf("%s: %v, want %d %s", what, a, status, body)
	}
}

// partnerKey is a partner's key pair (pkg/clients/assertiontest).
type partnerKey = assertiontest.Key
