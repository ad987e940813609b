package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/buildinfo"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestMain lets the test binary be the authserver binary: with
// AUTHSERVER_TEST_MAIN=1 it runs main, so that tests see the real exit
// status, stdout and stderr of a process. The tests run through
// redistest.RunMain: they mostly wait on Redis and on the processes.
func TestMain(m *testing.M) {
	if os.Getenv("AUTHSERVER_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(redistest.RunMain(m))
}

// exec runs `authserver args...` as a process with env (and nothing of the
// test's environment but PATH and GORACE) and returns its stdout, stderr
// and exit status.
func execAuthserver(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = []string{"AUTHSERVER_TEST_MAIN=1", "PATH=" + os.Getenv("PATH"), goraceEnv()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	default:
		t.Fatalf("run authserver: %v", err)
	}
	return out.String(), errOut.String(), code
}

// goraceEnv passes the test's race detector options to a process of the
// test binary: without GORACE=atexit_sleep_ms=0 (as CI's race-detector run
// sets it) every process that exits 0 sleeps a second at its exit.
func goraceEnv() string { return "GORACE=" + os.Getenv("GORACE") }

// runAuthserver runs the command line in-process (run) with env.
func runAuthserver(env map[string]string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	err = run(context.Background(), append([]string{"authserver"}, args...), func(k string) string { return env[k] }, &out, &errOut)
	return out.String(), errOut.String(), err
}

// The help of one command, exactly: its usage line, what it does and its
// flags, on stdout, exit 0, with -h, --help and `help COMMAND` alike.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	want := `usage: authserver clients create --org S --name N --audience pharma|hospital|psp_partner --scopes "..." [--rate-limit N] [--auth client_secret|private_key_jwt|self_signed_tls_client_auth (--jwks-file F | --jwks-url URL)|tls_client_auth (--tls-subject-dn DN | --tls-san-dns|uri|ip|email V)] [--dpop-bound] [--json]

Create a client; prints client_id and client_secret once (private_key_jwt: no secret; the client signs assertions with its private key).

flags:
  --audience string        pharma, hospital or psp_partner
  --auth string            client_secret; private_key_jwt (RFC 7523) or self_signed_tls_client_auth (RFC 8705) with --jwks-file or --jwks-url; tls_client_auth (RFC 8705) with one --tls-* (default client_secret)
  --dpop-bound             issue the client DPoP-bound tokens only (RFC 9449 dpop_bound_access_tokens): a token request without a DPoP proof is refused
  --json                   print JSON (deploy/docs/operator-guide.md: JSON output)
  --jwks-file string       a file holding the client's public JWK set (RFC 7517)
  --jwks-url string        an https URL serving the client's public JWK set, fetched by the token service (http only with JWKS_URL_ALLOW_HTTP=true)
  --name string            client name
  --org string             slug of an existing organisation
  --rate-limit int         API requests per minute, at least 1 (default 120)
  --scopes string          space-separated scopes (required; --scopes "" for none)
  --tls-san-dns string     tls_client_auth: the client certificate's DNS name SAN
  --tls-san-email string   tls_client_auth: the client certificate's e-mail address SAN
  --tls-san-ip string      tls_client_auth: the client certificate's IP address SAN
  --tls-san-uri string     tls_client_auth: the client certificate's URI SAN
  --tls-subject-dn string  tls_client_auth: the client certificate's subject DN, RFC 4514 (e.g. "CN=ward.example,O=St Elsewhere,C=NL")
`
	// As a process, and in-process for the other spellings.
	if stdout, stderr, code := execAuthserver(t, nil, "clients", "create", "--help"); stdout != want || stderr != "" || code != 0 {
		t.Errorf("authserver clients create --help: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, args := range [][]string{
		{"clients", "create", "-h"},
		{"clients", "create", "--org", "x", "--help"},
		{"help", "clients", "create"},
	} {
		stdout, stderr, err := runAuthserver(nil, args...)
		if stdout != want || stderr != "" || err != nil {
			t.Errorf("authserver %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
		}
	}
	// The help never shows the environment's values of secrets.
	stdout, _, err := runAuthserver(map[string]string{"REDIS_URL": "redis://u:hunter2@h:1/0"}, "serve", "--help")
	if err != nil || strings.Contains(stdout, "hunter2") || !strings.Contains(stdout, "\n  --metrics-addr string              listen address of GET /metrics, or off (env METRICS_ADDR) (default 127.0.0.1:9080)\n") {
		t.Errorf("serve --help: %v\n%s", err, stdout)
	}
	// Every command of the table has a help of its own.
	for _, c := range commands() {
		stdout, stderr, err := runAuthserver(nil, append(strings.Fields(c.Name), "--help")...)
		if err != nil || stderr != "" || !strings.HasPrefix(stdout, "usage: authserver "+c.Name) || !strings.Contains(stdout, c.Summary) {
			t.Errorf("authserver %s --help: %v\n%s%s", c.Name, err, stdout, stderr)
		}
	}
	// A group lists its subcommands.
	stdout, stderr, err := runAuthserver(nil, "clients", "--help")
	if err != nil || stderr != "" || !strings.HasPrefix(stdout, "usage: authserver clients SUBCOMMAND") || strings.Count(stdout, "\n  clients ") != 11 {
		t.Errorf("clients --help: %v\n%s%s", err, stdout, stderr)
	}
	// help lists every command and the exit statuses.
	stdout, stderr, code := execAuthserver(t, nil, "help")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "usage: authserver COMMAND [SUBCOMMAND]") ||
		strings.Count(stdout, "\n  ") != 2*len(commands()) || !strings.Contains(stdout, "Exit status: 0 success, 1 runtime failure, 2 usage error, 3 change written on the\nRedis primary but not confirmed by a replica in time") {
		t.Errorf("help: exit %d\n%s%s", code, stdout, stderr)
	}
	// Exit status 3 says what deploy/docs/operator-guide.md says: do not run
	// the command again.
	if strings.Contains(stdout, "(run the command again)") || !strings.Contains(stdout, "Do not run the command again") {
		t.Errorf("help on exit status 3 contradicts README:\n%s", stdout)
	}
}

// --version prints the module version and VCS revision of the build.
func TestVersion(t *testing.T) {
	want := "authserver " + buildinfo.Read().String() + "\n"
	for _, flag := range []string{"--version", "-version"} {
		if stdout, stderr, code := execAuthserver(t, nil, flag); stdout != want || stderr != "" || code != 0 {
			t.Errorf("authserver %s: exit %d, stdout %q (want %q), stderr %q", flag, code, stdout, want, stderr)
		}
	}
	if !strings.Contains(want, " (revision ") {
		t.Errorf("no revision in %q", want)
	}
	if _, _, code := execAuthserver(t, nil, "--version", "x"); code != 2 {
		t.Errorf("--version x: exit %d, want 2", code)
	}
}

// Exit statuses and messages, as a process: 2 for usage, 1 for runtime
// failures, one line on stderr, nothing on stdout.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	env := map[string]string{"REDIS_URL": redisURL(t, rdb), "REDIS_KEY_PREFIX": prefix}
	unknown := clients.NewClientID()
	deadRedis := map[string]string{"REDIS_URL": "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"}
	for _, tc := range []struct {
		env    map[string]string
		args   []string
		stderr string // "" + prefix match when it ends with "..."
		code   int
	}{
		{nil, nil, "", 2},
		{nil, []string{"frobnicate"}, "authserver: unknown command \"frobnicate\" (run 'authserver help')\n", 2},
		{nil, []string{"clients"}, "", 2},
		{env, []string{"clients", "list", "--org", "nope"}, "authserver: organisation \"nope\": not found\n", 1},
		{env, []string{"clients", "audit", unknown}, "authserver: client " + unknown + ": not found\n", 1},
		{env, []string{"clients", "show", unknown}, "authserver: client " + unknown + ": not found\n", 1},
		{env, []string{"clients", "create", "--org", "nope", "--name", "N", "--audience", "pharma", "--rate-limit", "0"},
			"authserver: --rate-limit 0: a limit must be at least 1 request per minute\n", 2},
		{env, []string{"clients", "set-rate-limit", unknown, "0"}, "authserver: rate limit 0: a limit must be at least 1 request per minute\n", 2},
		{env, []string{"clients", "set-rate-limit", "--token", unknown, "0"}, "authserver: rate limit 0: a limit must be at least 1 request per minute\n", 2},
		{env, []string{"orgs", "list", "--nope"}, "authserver: orgs list: flag provided but not defined: -nope (run 'authserver orgs list --help')\n", 2},
		{deadRedis, []string{"orgs", "list"}, "authserver: cannot reach Redis (REDIS_URL): dial tcp 127.0.0.1:...", 1},
		{map[string]string{"REDIS_URL": "ftp://[::1"}, []string{"orgs", "list"}, "authserver: REDIS_URL is not a URL\n", 2},
	} {
		name := strings.Join(tc.args, " ")
		stdout, stderr, code := execAuthserver(t, tc.env, tc.args...)
		if code != tc.code || stdout != "" {
			t.Errorf("authserver %s: exit %d, want %d; stdout %q", name, code, tc.code, stdout)
		}
		if p, ok := strings.CutSuffix(tc.stderr, "..."); ok {
			// go-redis's own "pool.go: failed to dial" line is silenced:
			// the one line is the command's.
			if !strings.HasPrefix(stderr, p) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("authserver %s: stderr %q, want one line starting %q", name, stderr, p)
			}
		} else if tc.stderr != "" && stderr != tc.stderr {
			t.Errorf("authserver %s: stderr %q, want %q", name, stderr, tc.stderr)
		}
	}
	// The usage of a missing command goes to stderr.
	if _, stderr, _ := execAuthserver(t, nil); !strings.HasPrefix(stderr, "usage: authserver COMMAND") || !strings.HasSuffix(stderr, "authserver: no command given\n") {
		t.Errorf("no command: stderr %q", stderr)
	}
}

// exitCode 3: a change written on the primary that no replica confirmed.
func TestExitCodeNotReplicated(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]int{
		nil: 0,
		fmt.Errorf("rotate svc_x: %w", clients.ErrNotReplicated): 3,
		usagef("bad"):                            2,
		fmt.Errorf("x: %w", clients.ErrNotFound): 1,
	} {
		if got := exitCode(err); got != want {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, want)
		}
	}
}

// The JSON of the operator commands is one documented object or array
// (deploy/docs/operator-guide.md, "JSON output"): the fields, and nothing
// else, of a client.
func TestJSONOutput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.must("orgs", "create", "--slug", "acme", "--name", "Acme", "--environment", "live")
	out := h.must("clients", "create", "--org", "acme", "--name", "ERP", "--audience", "pharma", "--scopes", "events.subscribe", "--json")
	var created map[string]any
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range created {
		keys = append(keys, k)
	}
	want := "audience auth_method client_id client_secret created_at credential_generation environment name organization_name organization_slug rate_limit_per_minute scopes secrets status token_rate_limit_per_minute updated_at"
	if got := strings.Join(sortedStrings(keys), " "); got != want {
		t.Errorf("clients create --json fields:\n%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(out, "{\n  \"client_id\": ") || !strings.HasSuffix(out, "}\n") {
		t.Errorf("not indented JSON: %s", out)
	}
}

func sortedStrings(s []string) []string {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s
}

// serve writes one stream of JSON records: go-redis's own lines (a failed
// dial while Redis is down) come through slog as component "redis".
func TestServeOneLogStream(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	keys := filepath.Join(t.TempDir(), "keys.json")
	h.must("keys", "generate", "--out", keys)
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "off", "--admin-addr", "off", "--keys", keys)
	cmd.Env = []string{"AUTHSERVER_TEST_MAIN=1", goraceEnv(), "REDIS_URL=redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"}
	stderr := &logtest.Sink{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "authserver listening on http://") {
		t.Fatalf("stdout %q (%v); stderr:\n%s", line, err, stderr.String())
	}
	base := strings.TrimSpace(strings.TrimPrefix(line, "authserver listening on "))
	// /readyz pings Redis, which is down: go-redis fails to dial and says
	// so, in the dial that request makes.
	if resp, err := httpGet(base + "/readyz"); err == nil && resp != 503 {
		t.Fatalf("/readyz with Redis down: %d", resp)
	}
	stderr.WaitFor(`"component":"redis"`, 10*time.Second)
	var fromRedis int
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("stderr line is not a JSON record: %s", l)
			continue
		}
		if rec["component"] == "redis" {
			fromRedis++
			if rec["level"] != "WARN" || !strings.Contains(rec["msg"].(string), "failed to dial") {
				t.Errorf("go-redis record: %v", rec)
			}
		}
	}
	if fromRedis == 0 {
		t.Errorf("no go-redis record in:\n%s", stderr.String())
	}
}

func httpGet(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestUnconfirmedChangePrintsItsSecret: with more replicas asked for than
// the node has (a single node, confirm_replicas=2), create and rotate-secret
// exit 3, say how many replicas acknowledged and how many exist, and still
// print the secret that works now; the rotation took effect.
func TestUnconfirmedChangePrintsItsSecret(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	sep := "?"
	if strings.Contains(redistest.URL(), "?") {
		sep = "&"
	}
	env := map[string]string{"REDIS_URL": redistest.URL() + sep + "confirm_replicas=2&confirm_timeout=50ms", "REDIS_KEY_PREFIX": prefix}
	if _, stderr, code := execAuthserver(t, env, "orgs", "create", "--slug", "unconf", "--name", "U", "--environment", "live"); code != 3 {
		t.Fatalf("orgs create: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := execAuthserver(t, env, "clients", "create", "--org", "unconf", "--name", "n", "--audience", "pharma", "--scopes", "", "--json")
	var made struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
		Gen    int64  `json:"credential_generation"`
	}
	if code != 3 || json.Unmarshal([]byte(stdout), &made) != nil || made.Secret == "" {
		t.Fatalf("clients create: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	want := "confirmed by 0 of the 2 replica(s) required within 50ms; the primary has only 0 replica(s) connected"
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "do not run this command again") {
		t.Fatalf("stderr %q lacks %q", stderr, want)
	}
	stdout, stderr, code = execAuthserver(t, env, "clients", "rotate-secret", made.ID)
	if code != 3 || !strings.Contains(stdout, "client_secret: svc_cs_") || !strings.Contains(stderr, "the secret printed above is the one that works now") {
		t.Fatalf("rotate-secret: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	store := clients.NewStore(rdb, prefix, nil)
	c, err := store.GetClient(t.Context(), made.ID)
	if err != nil || c.Generation != 2 {
		t.Fatalf("after the unconfirmed rotation: %+v, %v", c, err)
	}
}

// A binary built from this checkout prints its VCS revision (the Go
// toolchain's stamp, read through runtime/debug; this machine's and the
// image's GOFLAGS turn stamping off, so the build asks for it).
func TestVersionOfABuild(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	// The go command stamps a checkout whose .git is a directory, not a
	// git worktree's .git file.
	top, _ := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !fi.IsDir() {
		t.Skip("a git worktree: the go command does not stamp its builds")
	}
	bin := filepath.Join(t.TempDir(), "authserver")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := "(revision " + strings.TrimSpace(string(head)); !strings.HasPrefix(string(out), "authserver ") || !strings.Contains(string(out), want) {
		t.Errorf("--version of a build: %q, want %q in it", out, want)
	}
}
