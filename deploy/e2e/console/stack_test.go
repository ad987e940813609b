//go:build unix

package console

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// The suite's ports (18400-18499 are the console suite's).
const (
	portAPI          = 18401
	portAdmin        = 18402
	portMetrics      = 18403
	portResource     = 18404
	portResourceMetr = 18405
	// The token service whose writes no replica confirms.
	portUnconfAPI     = 18406
	portUnconfAdmin   = 18407
	portUnconfMetrics = 18408
)

// unconfirmedTimeout is how long the unconfirmed token service waits for
// a replica that never answers (WAIT), on each change.
const unconfirmedTimeout = "200ms"

// startUnconfirmed starts a second token service (its admin listener and
// console) on a redis-server of its own that has no replica, with a
// REDIS_URL that asks for one (confirm_replicas=1): every change takes
// effect on the primary and WAIT cannot be satisfied, so the admin API
// answers it 202 "replicas did not confirm", for real. It returns the
// console's URL and an operator's id and secret (made by the CLI on a URL
// that confirms nothing).
func (s *stack) startUnconfirmed(t *testing.T) (console, id, secret string) {
	t.Helper()
	srv := redistest.StartServer(t)
	dir := t.TempDir()
	plain := &stack{Servers: &e2etest.Servers{Bin: s.Bin, Dir: dir, Env: append(e2etest.BaseEnv(dir), "REDIS_URL="+srv.URL(), "LOG_LEVEL=info")}}
	keys := filepath.Join(dir, "signing.json")
	plain.CLI(t, "keys", "generate", "--out", keys)
	id, secret = plain.operator(t, false)
	env := append(e2etest.BaseEnv(dir), "REDIS_URL="+srv.URL()+"?confirm_replicas=1&confirm_timeout="+unconfirmedTimeout, "LOG_LEVEL=info")
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	base := "http://" + addr(portUnconfAPI)
	auth := e2etest.StartProcess(t, "authserver-unconfirmed", env, filepath.Join(s.Bin, "authserver"), "serve",
		"--addr", addr(portUnconfAPI), "--metrics-addr", addr(portUnconfMetrics), "--admin-addr", addr(portUnconfAdmin), "--keys", keys,
		"--issuer", base, "--audience", "partner-api")
	e2etest.WaitOK(t, base+"/readyz", auth)
	return "http://" + addr(portUnconfAdmin) + "/console/", id, secret
}

// stack is the token service (with its admin listener and console) and
// the resource server, each a process of the real binary.
type stack struct {
	*e2etest.Servers
	auth    string // the token service's base URL
	api     string // the resource server's base URL
	console string // the console's URL
	// authserver is the token service's process (its access records).
	authserver *e2etest.Process
}

func startStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{Servers: e2etest.PrepareServers(t)}
	keys := filepath.Join(s.Dir, "signing.json")
	s.CLI(t, "keys", "generate", "--out", keys)
	addr := func(p int) string { return "127.0.0.1:" + strconv.Itoa(p) }
	s.auth, s.api, s.console = "http://"+addr(portAPI), "http://"+addr(portResource), "http://"+addr(portAdmin)+"/console/"
	auth := e2etest.StartProcess(t, "authserver", s.Env, filepath.Join(s.Bin, "authserver"), "serve",
		"--addr", addr(portAPI), "--metrics-addr", addr(portMetrics), "--admin-addr", addr(portAdmin), "--keys", keys,
		"--issuer", s.auth, "--audience", "partner-api")
	e2etest.WaitOK(t, s.auth+"/readyz", auth)
	s.authserver = auth
	res := e2etest.StartProcess(t, "resourceserver", s.Env, filepath.Join(s.Bin, "resourceserver"), "serve",
		"--addr", addr(portResource), "--metrics-addr", addr(portResourceMetr), "--jwks-url", s.auth+"/.well-known/jwks.json",
		"--issuer", s.auth, "--audience", "partner-api", "--base-url", s.api)
	e2etest.WaitOK(t, s.api+"/readyz", res, auth)
	return s
}

// operator makes an operator client with the CLI and returns its id and
// secret.
func (s *stack) operator(t *testing.T, readOnly bool) (string, string) {
	t.Helper()
	args := []string{"operators", "create", "--name", "e2e console", "--json"}
	if readOnly {
		args = append(args, "--read-only")
	}
	var c struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	if err := json.Unmarshal(s.CLI(t, args...), &c); err != nil || c.ID == "" || c.Secret == "" {
		t.Fatalf("operators create: %v %+v", err, c)
	}
	return c.ID, c.Secret
}

// curl runs curl with args and returns the body and the status.
func curl(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command("curl", append([]string{"-s", "-w", "\n%{http_code}"}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	text := string(out)
	i := strings.LastIndex(text, "\n")
	status, _ := strconv.Atoi(strings.TrimSpace(text[i+1:]))
	return text[:i], status
}

// token gets a token with id and secret by curl; "" when refused.
func (s *stack) token(t *testing.T, id, secret string) (string, int) {
	t.Helper()
	body, status := curl(t, "-u", id+":"+secret, "-d", "grant_type=client_credentials", s.auth+"/api/v1/oauth/token/")
	var v struct {
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal([]byte(body), &v)
	return v.AccessToken, status
}

// me calls /me with token by curl and returns the status.
func (s *stack) me(t *testing.T, token string) int {
	t.Helper()
	_, status := curl(t, "-H", "Authorization: Bearer "+token, s.api+"/api/v1/me/")
	return status
}

// accessRecords are the token service's access records of path, each as
// it was logged (a line of JSON).
func (s *stack) accessRecords(path string) []string {
	var out []string
	for _, line := range strings.Split(s.authserver.Out.String(), "\n") {
		var rec struct {
			Msg  string `json:"msg"`
			Path string `json:"path"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "request" && rec.Path == path {
			out = append(out, line)
		}
	}
	return out
}
