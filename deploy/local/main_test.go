package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// startLocal runs the stack with env until the test ends and returns its
// welcome text; stop ends it early.
func startLocal(t *testing.T, env map[string]string, args ...string) (text string, stop func()) {
	t.Helper()
	if len(args) == 0 {
		args = []string{"--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"local"}, args...), func(k string) string { return env[k] }, pw, io.Discard)
		pw.Close()
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after Ctrl-C, want nil", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("local stack did not stop within 15 s of cancellation")
		}
	}
	t.Cleanup(stop)

	// Read the welcome text up to its last line.
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "Press Ctrl-C") {
			break
		}
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain
	return out.String(), stop
}

// block returns the indented lines that follow the line starting with
// heading, as printed (without their two-space indent).
func block(t *testing.T, text, heading string) []string {
	t.Helper()
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, heading) {
			continue
		}
		var out []string
		for _, b := range lines[i+1:] {
			if !strings.HasPrefix(b, "  ") {
				break
			}
			out = append(out, strings.TrimPrefix(b, "  "))
		}
		return out
	}
	t.Fatalf("no %q in:\n%s", heading, text)
	return nil
}

// tryIt runs the "Try it" lines exactly as printed, with bash in the
// repository's root, and returns /me's status and body.
func tryIt(t *testing.T, text string) (status string, me map[string]any) {
	t.Helper()
	script := block(t, text, "Try it")
	if len(script) < 4 {
		t.Fatalf("Try it: %d lines:\n%s", len(script), text)
	}
	last := len(script) - 1
	script[last] = strings.Replace(script[last], "curl -s ", "curl -s -w '\\n%{http_code}' ", 1)
	cmd := exec.Command("bash", "-c", "set -e\n"+strings.Join(script, "\n"))
	cmd.Dir = e2etest.RepoRoot(t)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("printed commands failed: %v\n%s", err, got)
	}
	body, status, _ := strings.Cut(strings.TrimSpace(string(got)), "\n")
	if status == "200" {
		if err := json.Unmarshal([]byte(body), &me); err != nil {
			t.Fatalf("/me body is not JSON: %v: %s", err, body)
		}
	} else {
		t.Errorf("GET /api/v1/me/ with the printed commands: status %s, body %s", status, body)
	}
	return status, me
}

var firstClientRE = regexp.MustCompile(`hospital +client_id=(svc_\w+)`)

// TestLocalStackFollowsItsOwnInstructions starts the one-command stack,
// runs the shell lines it prints, exactly as printed, and expects a 200
// from /api/v1/me/ describing the sandbox client.
func TestLocalStackFollowsItsOwnInstructions(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	text, _ := startLocal(t, map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": prefix})
	if !strings.Contains(text, "sandbox-simulation") || !strings.Contains(text, "demo data only") {
		t.Fatalf("welcome text does not name the sandbox organisation:\n%s", text)
	}
	_, me := tryIt(t, text)
	if me["environment"] != "sandbox" || me["api_version"] != "1" || me["audience"] != "hospital" {
		t.Errorf("/me = %v, want a sandbox hospital client of api_version 1", me)
	}
	org, _ := me["organization"].(map[string]any)
	if org["slug"] != "sandbox-simulation" {
		t.Errorf("organization = %v, want the simulation organisation", org)
	}
	if id := firstClientRE.FindStringSubmatch(text); id == nil || me["client_id"] != id[1] {
		t.Errorf("/me client_id = %v, want the printed hospital client %v", me["client_id"], id)
	}
	// The operator CLI is told the same Redis and key prefix.
	manage := block(t, text, "Manage this registry")
	if want := "export REDIS_URL='" + redistest.URL() + "' REDIS_KEY_PREFIX='" + prefix + "'"; manage[0] != want {
		t.Errorf("manage: %q, want %q", manage[0], want)
	}
}

// TestLocalStackRestart: against a registry that holds the sandbox already,
// no secret can be printed (only hashes are stored); the banner says so and
// its lines get a working secret with `authserver clients rotate-secret`.
func TestLocalStackRestart(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	env := map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": prefix}
	first, stop := startLocal(t, env)
	stop()
	text, _ := startLocal(t, env)
	if strings.Contains(text, "svc_cs_") || strings.Count(text, "(existed already: its secret was shown once, when it was created)") != 3 {
		t.Fatalf("restart banner prints a secret or does not say the clients existed:\n%s", text)
	}
	id := firstClientRE.FindStringSubmatch(first)
	if id == nil || !strings.Contains(text, "CLIENT_ID="+id[1]+"\n") || !strings.Contains(text, "clients rotate-secret \"$CLIENT_ID\" --json") {
		t.Fatalf("restart banner does not rotate the same hospital client %v:\n%s", id, text)
	}
	_, me := tryIt(t, text)
	if me["client_id"] != id[1] {
		t.Errorf("/me client_id = %v, want %s", me["client_id"], id[1])
	}
}

// TestLocalStackHandsOverInProcessRedis: with no REDIS_URL, the banner
// names the in-process Redis, and the operator CLI lines it prints manage
// that very registry.
func TestLocalStackHandsOverInProcessRedis(t *testing.T) {
	text, _ := startLocal(t, map[string]string{})
	manage := block(t, text, "Manage this registry")
	if !regexp.MustCompile(`^export REDIS_URL='redis://127\.0\.0\.1:\d+/0'$`).MatchString(manage[0]) ||
		manage[1] != "go run ./authserver clients list --org sandbox-simulation" {
		t.Fatalf("manage lines:\n%s", strings.Join(manage, "\n"))
	}
	cmd := exec.Command("bash", "-c", "set -e\n"+manage[0]+"\n"+manage[1])
	cmd.Dir = e2etest.RepoRoot(t)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, m := range regexp.MustCompile(`client_id=(svc_\w+)`).FindAllStringSubmatch(text, -1) {
		if !strings.Contains(string(out), m[1]+" ") {
			t.Errorf("clients list does not show %s:\n%s", m[1], out)
		}
	}
}

// TestLocalStackRefusesEmbeddedRedisInCI: under CI=true a missing REDIS_URL
// is an error, never a silent in-process fallback.
func TestLocalStackRefusesEmbeddedRedisInCI(t *testing.T) {
	env := map[string]string{"CI": "true"}
	err := run(context.Background(), []string{"local", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Fatalf("run = %v, want an error naming REDIS_URL", err)
	}
}

// TestLocalStackAdminAPI runs the banner's admin lines exactly as printed:
// a first operator made with the CLI, its token, and a listing of clients
// through the admin API.
func TestLocalStackAdminAPI(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	text, _ := startLocal(t, map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": prefix})
	script := block(t, text, "Admin API at")
	if len(script) != 5 {
		t.Fatalf("admin lines: %d:\n%s", len(script), text)
	}
	script[4] = strings.Replace(script[4], "curl -s ", "curl -s -w '\\n%{http_code}' ", 1)
	cmd := exec.Command("bash", "-c", "set -e\n"+strings.Join(script, "\n"))
	cmd.Dir = e2etest.RepoRoot(t)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("printed admin commands failed: %v\n%s", err, got)
	}
	body, status, _ := strings.Cut(strings.TrimSpace(string(got)), "\n")
	var page struct {
		Items []struct {
			ID string `json:"client_id"`
		} `json:"items"`
	}
	// The sandbox's three clients, the console's operator and the CLI's.
	if status != "200" || json.Unmarshal([]byte(body), &page) != nil || len(page.Items) != 5 {
		t.Fatalf("GET /admin/v1/clients with the printed commands: %s %s", status, body)
	}
}

// TestLocalStackFreePorts: `--addr 127.0.0.1:0` alone picks a free port
// for every listener, the admin API's too, even with its default port 8090
// taken; the banner names both.
func TestLocalStackFreePorts(t *testing.T) {
	if ln, err := net.Listen("tcp", "127.0.0.1:8090"); err == nil {
		defer ln.Close() // taken for the test (or taken already)
	}
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	text, _ := startLocal(t, map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": prefix}, "--addr", "127.0.0.1:0")
	api := regexp.MustCompile(`running at http://127\.0\.0\.1:(\d+) `).FindStringSubmatch(text)
	admin := regexp.MustCompile(`Admin API at http://127\.0\.0\.1:(\d+)/admin/v1 `).FindStringSubmatch(text)
	if api == nil || admin == nil || api[1] == "0" || admin[1] == "0" || admin[1] == "8090" || admin[1] == api[1] {
		t.Fatalf("banner does not name two free ports:\n%s", text)
	}
	for _, url := range []string{"http://127.0.0.1:" + api[1] + "/healthz", "http://127.0.0.1:" + admin[1] + "/admin/v1/openapi.json"} {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Errorf("GET %s: %d", url, res.StatusCode)
		}
	}
}

// TestLocalStackConsole: the banner names the console and a sandbox
// operator's sign-in, which signs in (a session cookie, the organisations
// page); a restart makes no second operator and prints no secret.
func TestLocalStackConsole(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	env := map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": prefix}
	text, stop := startLocal(t, env)
	m := regexp.MustCompile(`Operator console at (http://127\.0\.0\.1:\d+/console/)\n  sign in with the sandbox operator's client id (\S+) and secret (\S+)\n`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("banner without the console's sign-in:\n%s", text)
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	res, err := hc.PostForm(m[1]+"signin", url.Values{"client_id": {m[2]}, "client_secret": {m[3]}})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "<h1>Organisations</h1>") || !strings.Contains(string(body), "sandbox-simulation") {
		t.Fatalf("sign in with the printed operator: %d\n%s", res.StatusCode, body)
	}
	stop()
	again, _ := startLocal(t, env)
	if !strings.Contains(again, "Operator console at ") || strings.Contains(again, "sandbox operator's client id") {
		t.Fatalf("restart banner:\n%s", again)
	}
}

// TestLocalStackHelp: -h (and --help) lists every flag, as the servers'
// help does (cli.PrintFlags), and exits 0 (issue 59 point 14: it printed
// only "flag: help requested").
func TestLocalStackHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		var out strings.Builder
		if err := run(context.Background(), []string{"local", arg}, func(string) string { return "" }, &out, io.Discard); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		for _, want := range []string{"usage: go run ./deploy/local [FLAGS]", "\n  --addr string ", "(default 127.0.0.1:8000)",
			"\n  --admin-addr string ", "(default 127.0.0.1:8090)", "\n  --dpop-nonces ", "\n  --keys string ", "\n  --log-level string "} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: no %q in\n%s", arg, want, out.String())
			}
		}
	}
}

// TestLocalStackAdminOnLoopback: --addr :0 puts the API on every
// interface, but the admin API stays on loopback unless --admin-addr says
// otherwise (issue 59 point 14).
func TestLocalStackAdminOnLoopback(t *testing.T) {
	fs := newFlagSet()
	fs.String("admin-addr", defaultAdminAddr, "")
	if got := freeAlongside(fs, ":0", defaultAdminAddr); got != "127.0.0.1:0" {
		t.Errorf("--addr :0: admin API on %q, want 127.0.0.1:0", got)
	}
	if got := freeAlongside(fs, "0.0.0.0:8000", defaultAdminAddr); got != defaultAdminAddr {
		t.Errorf("--addr 0.0.0.0:8000: admin API on %q, want %s", got, defaultAdminAddr)
	}
	if err := fs.Parse([]string{"--admin-addr", ":0"}); err != nil {
		t.Fatal(err)
	}
	if got := freeAlongside(fs, ":0", ":0"); got != ":0" {
		t.Errorf("--admin-addr :0 given: %q, want it as given", got)
	}
	rdb := redistest.Client(t)
	text, _ := startLocal(t, map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": redistest.Prefix(t, rdb)}, "--addr", ":0")
	if !regexp.MustCompile(`Admin API at http://127\.0\.0\.1:\d+/admin/v1 `).MatchString(text) {
		t.Errorf("--addr :0: the admin API is not on loopback:\n%s", text)
	}
}

// TestLocalStackDPoPNonces: --dpop-nonces makes a DPoP token request
// without a nonce 400 use_dpop_nonce with a DPoP-Nonce (RFC 9449 section
// 8), as DPOP_NONCES=true does for the servers.
func TestLocalStackDPoPNonces(t *testing.T) {
	rdb := redistest.Client(t)
	text, _ := startLocal(t, map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": redistest.Prefix(t, rdb)},
		"--addr", "127.0.0.1:0", "--admin-addr", "off", "--dpop-nonces")
	base := regexp.MustCompile(`running at (http://127\.0\.0\.1:\d+) `).FindStringSubmatch(text)
	cred := regexp.MustCompile(`client_id=(\S+) client_secret=(\S+)`).FindStringSubmatch(text)
	if base == nil || cred == nil || !strings.Contains(text, "DPoP server nonces are on") {
		t.Fatalf("banner:\n%s", text)
	}
	req, _ := http.NewRequest(http.MethodPost, base[1]+"/api/v1/oauth/token/", strings.NewReader("grant_type=client_credentials"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(cred[1], cred[2])
	req.Header.Set("DPoP", "not-a-proof")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	// A malformed proof is refused; the nonce is on the answer all the
	// same (section 8.2).
	if res.StatusCode != http.StatusBadRequest || res.Header.Get("DPoP-Nonce") == "" {
		t.Errorf("token request with a DPoP header: %d without DPoP-Nonce, want one while nonces are on", res.StatusCode)
	}
}
