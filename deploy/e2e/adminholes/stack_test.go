//go:build unix

package adminholes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

const (
	audience = "partner-api"
	org      = "holes"
)

// The suite's ports: 18200-18299, each handed out once per test binary
// and only while free.
const portLow, portHigh = 18200, 18300

var ports struct {
	sync.Mutex
	next int
}

// port returns a free loopback port of the suite's range.
func port(t testing.TB) int {
	t.Helper()
	ports.Lock()
	defer ports.Unlock()
	if ports.next == 0 {
		ports.next = portLow
	}
	for ; ports.next < portHigh; ports.next++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(ports.next))
		if err != nil {
			continue
		}
		_ = l.Close()
		ports.next++
		return ports.next - 1
	}
	t.Fatalf("no free port left in %d-%d", portLow, portHigh-1)
	return 0
}

// stack is a token service (with its admin API) and a resource server.
type stack struct {
	*e2etest.Servers
	issuer string // the token service's base URL, its issuer
	api    string // the resource server's, its BASE_URL
	admin  string // the admin API's, its derived ADMIN_BASE_URL
	auth   *e2etest.Process
	hc     *http.Client
}

// startStack starts both servers; the token service fetches jwks_uri over
// http and from loopback (the tests' key servers).
func startStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{Servers: e2etest.PrepareServers(t, "JWKS_URL_ALLOW_HTTP=true", "JWKS_URL_ALLOW_PRIVATE=true"), hc: &http.Client{Timeout: 30 * time.Second}}
	keys := filepath.Join(s.Dir, "signing.json")
	s.CLI(t, "keys", "generate", "--out", keys)
	s.CLI(t, "orgs", "create", "--slug", org, "--name", "Holes", "--environment", "live")

	authAddr, adminAddr, apiAddr := s.addr(t), s.addr(t), s.addr(t)
	s.issuer, s.admin, s.api = "http://"+authAddr, "http://"+adminAddr, "http://"+apiAddr
	s.auth = e2etest.StartProcess(t, "authserver", s.Env, filepath.Join(s.Bin, "authserver"), "serve",
		"--addr", authAddr, "--metrics-addr", "off", "--admin-addr", adminAddr, "--keys", keys, "--issuer", s.issuer, "--audience", audience)
	e2etest.WaitOK(t, s.issuer+"/readyz", s.auth)
	res := e2etest.StartProcess(t, "resourceserver", s.Env, filepath.Join(s.Bin, "resourceserver"), "serve",
		"--addr", apiAddr, "--metrics-addr", "off", "--jwks-url", s.issuer+"/.well-known/jwks.json", "--issuer", s.issuer,
		"--audience", audience, "--base-url", s.api)
	e2etest.WaitOK(t, s.api+"/readyz", res, s.auth)
	return s
}

func (s *stack) addr(t *testing.T) string { return "127.0.0.1:" + strconv.Itoa(port(t)) }

// credentials creates a client with the CLI (`operators create` or
// `clients create`, args after it) and returns its id and secret.
func (s *stack) credentials(t *testing.T, args ...string) (id, secret string) {
	t.Helper()
	var v struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	out := s.CLI(t, append(args, "--json")...)
	if err := json.Unmarshal(out, &v); err != nil || v.ID == "" || v.Secret == "" {
		t.Fatalf("authserver %s --json: %v\n%s", strings.Join(args, " "), err, out)
	}
	return v.ID, v.Secret
}

// answer is an HTTP answer.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// call sends a request; body is sent as it is (a string) or as JSON, and
// header holds name, value pairs ("Host" sets the request's Host).
func (s *stack) call(t *testing.T, method, url string, body any, header ...string) answer {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

// token gets an access token for id and secret; with proof, a DPoP proof
// for the token endpoint, a DPoP-bound one.
func (s *stack) token(t *testing.T, id, secret, proof string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.issuer+"/api/v1/oauth/token/", strings.NewReader(e2etest.Form("grant_type", "client_credentials")))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	e2etest.Basic(id, secret)(req)
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 || v.AccessToken == "" {
		t.Fatalf("token for %s: %d %v", id, resp.StatusCode, err)
	}
	if want := map[bool]string{true: "DPoP", false: "Bearer"}[proof != ""]; v.TokenType != want {
		t.Fatalf("token_type %q, want %q", v.TokenType, want)
	}
	return v.AccessToken
}

// problem is the admin API's problem body for a, as it must be: status,
// code and detail, the request id a.header names.
func problem(a answer, status int, code, detail string) string {
	b, _ := json.Marshal(map[string]any{"type": "about:blank", "title": http.StatusText(status), "status": status,
		"detail": detail, "code": code, "request_id": a.header.Get("X-Request-Id")})
	return string(b)
}

// wantProblem checks that a is exactly that problem, as application/problem+json.
func wantProblem(t *testing.T, what string, a answer, status int, code, detail string) {
	t.Helper()
	if a.status != status || a.header.Get("Content-Type") != "application/problem+json" || !sameJSON(a.body, problem(a, status, code, detail)) {
		t.Errorf("%s: %d %s %s\nwant %d %s", what, a.status, a.header.Get("Content-Type"), a.body, status, problem(a, status, code, detail))
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a []byte, b string) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}
