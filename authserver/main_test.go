package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

var (
	clientIDRE = regexp.MustCompile(`^svc_[a-z2-7]{24}$`)
	secretRE   = regexp.MustCompile(`^svc_cs_[A-Za-z0-9_-]{43}$`)
)

// harness runs the command against the test Redis under a key prefix of
// the test's own.
type harness struct {
	t      *testing.T
	env    map[string]string
	rdb    redis.UniversalClient
	prefix string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	// ADMIN_ADDR off: a serve run never takes the default 127.0.0.1:8090,
	// which other tests' servers may hold meanwhile.
	return &harness{t: t, rdb: rdb, prefix: prefix, env: map[string]string{"REDIS_URL": redisURL(t, rdb), "REDIS_KEY_PREFIX": prefix, "ADMIN_ADDR": "off"}}
}

// redisURL is the URL of rdb: the test Redis, or the in-process fallback
// redistest.Client chose when there is none.
func redisURL(t *testing.T, rdb redis.UniversalClient) string {
	t.Helper()
	u := redistest.URL()
	opt, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := rdb.(*redis.Client); ok && c.Options().Addr != opt.Addr {
		return "redis://" + c.Options().Addr + "/0"
	}
	return u
}

func (h *harness) getenv(k string) string { return h.env[k] }

func (h *harness) store() *clients.Store { return clients.NewStore(h.rdb, h.prefix, nil) }

// run runs the command line and returns its stdout and error.
func (h *harness) run(args ...string) (string, error) {
	h.t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"authserver"}, args...), h.getenv, &stdout, &stderr)
	return stdout.String(), err
}

// must runs the command line and fails the test on error.
func (h *harness) must(args ...string) string {
	h.t.Helper()
	out, err := h.run(args...)
	if err != nil {
		h.t.Fatalf("authserver %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// createdClient is the --json output of clients create and rotate-secret.
type createdClient struct {
	operations.Client
	ClientSecret string `json:"client_secret"`
}

func (h *harness) createClient(args ...string) createdClient {
	h.t.Helper()
	out := h.must(append([]string{"clients", "create", "--json"}, args...)...)
	var c createdClient
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		h.t.Fatalf("clients create --json: %v: %s", err, out)
	}
	return c
}

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate" (run 'authserver help')`},
		{[]string{"clients"}, "clients: missing subcommand (run 'authserver help clients')"},
		{[]string{"clients", "frob"}, `unknown command "clients frob" (run 'authserver help clients')`},
		{[]string{"orgs", "delete"}, `unknown command "orgs delete" (run 'authserver help orgs')`},
		{[]string{"clients", "show"}, "clients show takes 1 argument(s), got 0 (run 'authserver clients show --help')"},
		{[]string{"clients", "set-rate-limit", "svc_x"}, "clients set-rate-limit takes 2 argument(s), got 1 (run 'authserver clients set-rate-limit --help')"},
		{[]string{"orgs", "list", "extra"}, "orgs list takes 0 argument(s), got 1 (run 'authserver orgs list --help')"},
		{[]string{"orgs", "list", "--nope"}, "orgs list: flag provided but not defined: -nope (run 'authserver orgs list --help')"},
		{[]string{"keys"}, "keys: missing subcommand (run 'authserver help keys')"},
		{[]string{"keys", "promote", "--file", "x.json"}, "keys promote takes 1 argument(s), got 0 (run 'authserver keys promote --help')"},
		{[]string{"keys", "promote", "kid"}, "keys promote needs --file FILE"},
		{[]string{"keys", "generate", "--out", "x.json", "--rotate", "--stage"}, "--keep must not be negative, and --rotate and --stage exclude each other"},
		{[]string{"keys", "generate"}, "keys generate needs --out FILE"},
		{[]string{"serve", "extra"}, "serve takes 0 argument(s), got 1 (run 'authserver serve --help')"},
		{[]string{"healthcheck", "extra"}, "healthcheck takes 0 argument(s), got 1 (run 'authserver healthcheck --help')"},
		{[]string{"help", "nope"}, `unknown command "nope" (run 'authserver help')`},
		{[]string{"clients", "create", "--org", "a", "--name", "n", "--audience", "pharma", "--rate-limit", "0"}, "--rate-limit 0: a limit must be at least 1 request per minute"},
		{[]string{"clients", "create", "--org", "a", "--name", "n", "--audience", "pharma"}, `clients create needs --scopes "SCOPE ..." (--scopes "" makes a client with no scope)`},
		{[]string{"clients", "set-rate-limit", "svc_x", "0"}, "rate limit 0: a limit must be at least 1 request per minute"},
		{[]string{"clients", "set-rate-limit", "--token", "svc_x", "--", "-1"}, "rate limit -1: a limit must be at least 1 request per minute"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := h.run(tc.args...)
			if !isUsage(err) || err.Error() != tc.want {
				t.Errorf("error %v (usage: %v), want usage error %q", err, isUsage(err), tc.want)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"authserver"}, h.getenv, &stdout, &stderr); !strings.Contains(stderr.String(), "usage: authserver COMMAND") {
		t.Errorf("no command: err %v, stderr %q", err, stderr.String())
	}
	if out := h.must("help"); !strings.Contains(out, "clients create --org S") {
		t.Errorf("help: %q", out)
	}
}

func TestKeysGenerate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	file := filepath.Join(t.TempDir(), "keys.json")

	out := h.must("keys", "generate", "--out", file)
	ks, err := accesstoken.LoadKeySet(file)
	if err != nil {
		t.Fatal(err)
	}
	first := ks.SigningKeyID()
	if want := file + ": new key " + first + " (EdDSA)\nsigning key: " + first + "\npublished:   [" + first + "]\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	before, _ := os.ReadFile(file)

	// No silent overwrite.
	_, err = h.run("keys", "generate", "--out", file)
	if err == nil || err.Error() != file+" exists: pass --rotate or --stage to add a new key to it" {
		t.Errorf("overwrite without --rotate: %v", err)
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(before, after) {
		t.Error("the refused overwrite changed the file")
	}

	// --rotate puts a new signing key in front and keeps the old one.
	out = h.must("keys", "generate", "--out", file, "--rotate", "--json")
	var res struct {
		File       string   `json:"file"`
		SigningKid string   `json:"signing_kid"`
		Kids       []string `json:"kids"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json: %v: %s", err, out)
	}
	ks, err = accesstoken.LoadKeySet(file)
	if err != nil {
		t.Fatal(err)
	}
	if res.File != file || res.SigningKid != ks.SigningKeyID() || res.SigningKid == first || len(res.Kids) != 2 || res.Kids[0] != res.SigningKid || res.Kids[1] != first {
		t.Errorf("rotate: %+v (first kid %s)", res, first)
	}
	if _, ok := ks.Public().LookupKeyID(first); !ok {
		t.Error("rotation dropped the previous key")
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Errorf("rotated key file mode %v", fi.Mode().Perm())
	}
	// --keep bounds the earlier keys kept.
	h.must("keys", "generate", "--out", file, "--rotate", "--keep", "0")
	if ks, _ := accesstoken.LoadKeySet(file); ks.Public().Len() != 1 {
		t.Errorf("--keep 0 kept %d keys", ks.Public().Len())
	}

	// --stage publishes a new key without signing with it; promote makes it
	// sign, keeping the old one published.
	ks, _ = accesstoken.LoadKeySet(file)
	signing := ks.SigningKeyID()
	h.must("keys", "generate", "--out", file, "--stage")
	ks, _ = accesstoken.LoadKeySet(file)
	ids := ks.KeyIDs()
	if len(ids) != 2 || ks.SigningKeyID() != signing {
		t.Fatalf("--stage: kids %v signing %s, want the old key still signing and a second key published", ids, ks.SigningKeyID())
	}
	staged := ids[1]
	out = h.must("keys", "promote", "--file", file, "--", staged) // a kid may start with "-"
	if !strings.Contains(out, "promoted "+staged) {
		t.Errorf("promote output %q", out)
	}
	ks, _ = accesstoken.LoadKeySet(file)
	if ks.SigningKeyID() != staged || len(ks.KeyIDs()) != 2 || ks.KeyIDs()[1] != signing {
		t.Errorf("after promote: kids %v, want [%s %s]", ks.KeyIDs(), staged, signing)
	}
	if _, err := h.run("keys", "promote", "--file", file, "no-such-kid"); !isUsage(err) {
		t.Errorf("promote of an unknown kid: %v, want a usage error", err)
	}
	if out := h.must("keys", "list", "--file", file); !strings.Contains(out, "signing key: "+staged) {
		t.Errorf("keys list: %q", out)
	}

	es := filepath.Join(t.TempDir(), "es.json")
	if out := h.must("keys", "generate", "--out", es, "--alg", "ES256"); !strings.Contains(out, "(ES256)\nsigning key: ") {
		t.Errorf("ES256: %q", out)
	}
	if _, err := h.run("keys", "generate", "--out", filepath.Join(t.TempDir(), "x.json"), "--alg", "RS256"); !isUsage(err) {
		t.Errorf("--alg RS256: %v, want a usage error", err)
	}
	if _, err := h.run("keys", "generate", "--out", filepath.Join(t.TempDir(), "missing-dir", "x.json")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestOrgs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if out := h.must("orgs", "create", "--slug", "acme", "--name", "Acme Pharma", "--environment", "live"); out != "created organisation acme (Acme Pharma, live)\n" {
		t.Errorf("create: %q", out)
	}
	h.must("orgs", "create", "--slug", "beta", "--name", "Beta Hospital", "--environment", "sandbox", "--json")
	_, err := h.run("orgs", "create", "--slug", "acme", "--name", "Again", "--environment", "live")
	if err == nil || !errors.Is(err, clients.ErrExists) || strings.Contains(err.Error(), "\n") {
		t.Errorf("duplicate slug: %v", err)
	}
	_, err = h.run("orgs", "create", "--slug", "Bad Slug", "--name", "", "--environment", "prod")
	if err == nil || !errors.Is(err, clients.ErrInvalid) {
		t.Fatalf("invalid org: %v", err)
	}
	// Every problem at once, printed on one line.
	line := oneLine(err)
	for _, want := range []string{`slug "Bad Slug"`, "name: 1-200 characters required", `environment "prod"`} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "\n") {
		t.Errorf("%q is not one line", line)
	}

	out := h.must("orgs", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "SLUG") || !strings.HasPrefix(lines[1], "acme ") || !strings.Contains(lines[1], "Acme Pharma") || !strings.HasPrefix(lines[2], "beta ") {
		t.Errorf("orgs list:\n%s", out)
	}
	var orgs []map[string]any
	if err := json.Unmarshal([]byte(h.must("orgs", "list", "--json")), &orgs); err != nil {
		t.Fatal(err)
	}
	if len(orgs) != 2 || orgs[0]["slug"] != "acme" || orgs[0]["name"] != "Acme Pharma" || orgs[0]["environment"] != "live" || orgs[1]["environment"] != "sandbox" || orgs[0]["created_at"] == nil {
		t.Errorf("orgs list --json: %v", orgs)
	}
}

func TestClients(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.must("orgs", "create", "--slug", "acme", "--name", "Acme", "--environment", "live")
	h.must("orgs", "create", "--slug", "other", "--name", "Other", "--environment", "live")

	c := h.createClient("--org", "acme", "--name", "Acme ERP", "--audience", "hospital", "--scopes", "patients.read events.subscribe", "--rate-limit", "240")
	if !clientIDRE.MatchString(c.ID) || !secretRE.MatchString(c.ClientSecret) {
		t.Errorf("client_id %q, client_secret %q", c.ID, c.ClientSecret)
	}
	if c.Name != "Acme ERP" || c.Audience != "hospital" || c.OrgSlug != "acme" || c.Status != "active" || c.RateLimitPerMinute != 240 ||
		c.TokenRateLimitPerMinute != 30 || c.Generation != 1 || strings.Join(c.Scopes, " ") != "patients.read events.subscribe" {
		t.Errorf("created %+v", c.Client)
	}
	if !h.authenticates(ctx, c.ID, c.ClientSecret) {
		t.Error("the printed secret does not authenticate")
	}
	// For people: the secret once, with the warning.
	out := h.must("clients", "create", "--org", "other", "--name", "Other app", "--audience", "psp_partner", "--scopes", "")
	if strings.Count(out, "svc_cs_") != 1 || !strings.Contains(out, "The secret is shown this once") {
		t.Errorf("clients create:\n%s", out)
	}

	// Patient-level scopes are never granted to pharma: one clear line.
	_, err := h.run("clients", "create", "--org", "acme", "--name", "P", "--audience", "pharma", "--scopes", "patients.read")
	if err == nil || isUsage(err) {
		t.Fatalf("pharma with patients.read: %v", err)
	}
	// (pkg/clients wraps ErrInvalid twice here, "invalid input: invalid
	// input: ...", hence the suffix; reported to its owner.)
	if want := `scope "patients.read": patient-level scopes are for hospital clients only, never pharma`; !errors.Is(err, clients.ErrInvalid) ||
		!strings.HasPrefix(oneLine(err), "invalid input: ") || !strings.HasSuffix(oneLine(err), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("message %q, want one line ending %q", oneLine(err), want)
	}
	_, err = h.run("clients", "create", "--org", "nope", "--name", "", "--audience", "pharma", "--scopes", "referrals.write bogus")
	if err == nil || strings.Contains(oneLine(err), "\n") || !strings.Contains(oneLine(err), `scope "bogus": unknown`) || !strings.Contains(oneLine(err), "never pharma") {
		t.Errorf("several problems: %q", oneLine(err))
	}
	if _, err := h.run("clients", "create", "--org", "ghost", "--name", "G", "--audience", "pharma", "--scopes", ""); !errors.Is(err, clients.ErrNotFound) {
		t.Errorf("unknown org: %v", err)
	}

	// Rotation gives a new secret; only it authenticates.
	out = h.must("clients", "rotate-secret", c.ID, "--json")
	var rot createdClient
	if err := json.Unmarshal([]byte(out), &rot); err != nil {
		t.Fatal(err)
	}
	if !secretRE.MatchString(rot.ClientSecret) || rot.ClientSecret == c.ClientSecret || rot.ID != c.ID || rot.Generation != 2 {
		t.Errorf("rotate-secret: %+v", rot)
	}
	if h.authenticates(ctx, c.ID, c.ClientSecret) || !h.authenticates(ctx, c.ID, rot.ClientSecret) {
		t.Error("after rotation the old secret works or the new one does not")
	}

	// Rate limits.
	if out := h.must("clients", "set-rate-limit", c.ID, "500"); out != "client "+c.ID+": 500 API requests and 30 token requests per minute, from the next request\n" {
		t.Errorf("set-rate-limit: %q", out)
	}
	if out := h.must("clients", "set-rate-limit", "--token", c.ID, "45"); !strings.Contains(out, "500 API requests and 45 token requests") {
		t.Errorf("set-rate-limit --token: %q", out)
	}
	if _, err := h.run("clients", "set-rate-limit", c.ID, "lots"); !isUsage(err) {
		t.Errorf("non-numeric limit: %v", err)
	}
	if _, err := h.run("clients", "set-rate-limit", c.ID, "0"); !isUsage(err) {
		t.Errorf("zero limit: %v, want a usage error", err)
	}

	// show, list and audit never print a secret.
	show := h.must("clients", "show", c.ID)
	for _, want := range []string{"Acme ERP", "hospital", "events.subscribe patients.read", "500/min API, 45/min token", "generation"} {
		if !strings.Contains(show, want) {
			t.Errorf("show lacks %q:\n%s", want, show)
		}
	}
	var shown map[string]any
	if err := json.Unmarshal([]byte(h.must("clients", "show", c.ID, "--json")), &shown); err != nil {
		t.Fatal(err)
	}
	if shown["client_id"] != c.ID || shown["rate_limit_per_minute"] != float64(500) || shown["token_rate_limit_per_minute"] != float64(45) {
		t.Errorf("show --json: %v", shown)
	}
	list := h.must("clients", "list")
	if strings.Count(list, "svc_") != 2 || !strings.Contains(list, c.ID) {
		t.Errorf("list:\n%s", list)
	}
	var listed []map[string]any
	if err := json.Unmarshal([]byte(h.must("clients", "list", "--org", "acme", "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0]["client_id"] != c.ID {
		t.Errorf("list --org acme: %v", listed)
	}
	audit := h.must("clients", "audit", c.ID)
	for _, want := range []string{"client.created", "client.rotate", "client.rate_limit", "client.token_rate_limit"} {
		if !strings.Contains(audit, want) {
			t.Errorf("audit lacks %s:\n%s", want, audit)
		}
	}
	for name, text := range map[string]string{
		"show": show, "show --json": h.must("clients", "show", c.ID, "--json"), "list": list,
		"list --json": h.must("clients", "list", "--json"), "audit": audit, "audit --json": h.must("clients", "audit", c.ID, "--json"),
	} {
		if strings.Contains(text, "svc_cs_") || strings.Contains(text, "digest") {
			t.Errorf("%s prints a secret or its digest:\n%s", name, text)
		}
	}

	// Revocation is final.
	if out := h.must("clients", "revoke", c.ID); out != "revoked client "+c.ID+": token requests are refused and every token it held is dead\n" {
		t.Errorf("revoke: %q", out)
	}
	if h.authenticates(ctx, c.ID, rot.ClientSecret) {
		t.Error("a revoked client's secret still authenticates")
	}
	if !strings.Contains(h.must("clients", "show", c.ID), "revoked") {
		t.Error("show does not say revoked")
	}
	if _, err := h.run("clients", "rotate-secret", c.ID); !errors.Is(err, clients.ErrRevoked) {
		t.Errorf("rotate a revoked client: %v", err)
	}
	unknown := clients.NewClientID()
	for _, args := range [][]string{{"show", unknown}, {"revoke", unknown}, {"rotate-secret", unknown}, {"set-rate-limit", unknown, "5"}, {"show", "not-an-id"}} {
		if _, err := h.run(append([]string{"clients"}, args...)...); !errors.Is(err, clients.ErrNotFound) {
			t.Errorf("clients %v: %v, want not found", args, err)
		}
	}
}

func TestSandboxSeed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	first := h.must("sandbox", "seed")
	if strings.Count(first, "client_secret: svc_cs_") != 3 || !strings.Contains(first, "sandbox-simulation") || !strings.Contains(first, "demo data only") {
		t.Errorf("first seed:\n%s", first)
	}
	second := h.must("sandbox", "seed")
	if strings.Contains(second, "svc_cs_") || strings.Count(second, "existed already") != 3 {
		t.Errorf("second seed prints secrets or does not say the clients exist:\n%s", second)
	}
	var seeded struct {
		Organization map[string]any  `json:"organization"`
		Clients      []createdClient `json:"clients"`
	}
	out := h.must("sandbox", "seed", "--json")
	if err := json.Unmarshal([]byte(out), &seeded); err != nil {
		t.Fatal(err)
	}
	if seeded.Organization["slug"] != "sandbox-simulation" || seeded.Organization["environment"] != "sandbox" || len(seeded.Clients) != 3 || strings.Contains(out, "svc_cs_") {
		t.Errorf("seed --json:\n%s", out)
	}
	for _, c := range seeded.Clients {
		if c.Audience == "pharma" && strings.Contains(strings.Join(c.Scopes, " "), "patients.read") {
			t.Errorf("sandbox pharma client holds a patient scope: %v", c.Scopes)
		}
	}
	// Still three clients: seeding is idempotent.
	var listed []map[string]any
	if err := json.Unmarshal([]byte(h.must("clients", "list", "--org", "sandbox-simulation", "--json")), &listed); err != nil || len(listed) != 3 {
		t.Errorf("%d sandbox clients (%v)", len(listed), err)
	}
}

func TestOperatorRedisUnreachable(t *testing.T) {
	t.Parallel()
	port := redistest.FreePort(t)
	env := map[string]string{"REDIS_URL": "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"}
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"authserver", "orgs", "list"}, func(k string) string { return env[k] }, &stdout, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "cannot reach Redis (REDIS_URL): ") {
		t.Errorf("unreachable Redis: %v", err)
	}
	env["REDIS_URL"] = "ftp://[::1"
	if err := run(context.Background(), []string{"authserver", "orgs", "list"}, func(k string) string { return env[k] }, &stdout, io.Discard); !isUsage(err) {
		t.Errorf("bad REDIS_URL: %v, want a usage error", err)
	}
}

func TestServeConfig(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// --admin-addr on every interface: no address to take the admin API's
	// public base URL from (issue 59 point 8: never a request's Host).
	_, err := h.run("serve", "--addr", "", "--issuer", "", "--audience", "", "--trusted-proxies", "10.0.0.0/33", "--admin-addr", ":8090")
	if !isUsage(err) {
		t.Fatalf("bad config: %v, want a usage error", err)
	}
	line := oneLine(err)
	for _, want := range []string{"--addr (ADDR) is required", "--keys (KEYS_FILE) is required", "--issuer (ISSUER) is required", "--audience (AUDIENCE) is required", `trusted proxy "10.0.0.0/33"`,
		`--admin-base-url (ADMIN_BASE_URL) is required: --admin-addr (ADMIN_ADDR) ":8090" names no host and port`} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "\n") {
		t.Errorf("not one line: %q", line)
	}
	keys := filepath.Join(t.TempDir(), "keys.json")
	h.must("keys", "generate", "--out", keys)
	if _, err := h.run("serve", "--keys", keys, "--log-level", "loud"); !isUsage(err) || !strings.Contains(err.Error(), `log level "loud"`) {
		t.Errorf("bad log level: %v", err)
	}
	if _, err := h.run("serve", "--keys", filepath.Join(t.TempDir(), "none.json")); err == nil || isUsage(err) {
		t.Errorf("missing key file: %v", err)
	}
	if _, err := h.run("serve", "--keys", keys, "--addr", "256.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "listen on 256.0.0.1:0") {
		t.Errorf("bad address: %v", err)
	}
	// Every boolean variable reads as strconv.ParseBool does; anything else
	// is a usage error naming it, never silently false.
	// REDIS_AUTOPIPELINE also takes auto (serveconfig.Pipelining).
	for name, want := range map[string]string{"ACCEPT_LEGACY_SECRETS": "true or false", "JWKS_URL_ALLOW_HTTP": "true or false",
		"JWKS_URL_ALLOW_PRIVATE": "true or false", "REDIS_AUTOPIPELINE": "auto, true or false"} {
		bh := newHarness(t)
		bh.env[name] = "yes"
		if _, err := bh.run("serve", "--keys", keys); !isUsage(err) || err.Error() != name+`="yes": want `+want+` (or 1 or 0)` {
			t.Errorf("%s=yes: %v", name, err)
		}
	}
	bh := newHarness(t)
	bh.env["JWKS_URL_ALLOW_HTTP"] = "on"
	if _, err := bh.run("clients", "create", "--org", "x", "--name", "n", "--audience", "pharma", "--scopes", "programme.metrics.read",
		"--auth", "private_key_jwt", "--jwks-url", "http://example.test/jwks"); !isUsage(err) || err.Error() != `JWKS_URL_ALLOW_HTTP="on": want true or false (or 1 or 0)` {
		t.Errorf("clients create with JWKS_URL_ALLOW_HTTP=on: %v", err)
	}
}

// TestServe runs `authserver serve` on :0 end to end: it prints where it
// listens, issues a token to the standard client, answers the health check
// command, and shuts down gracefully when the context ends.
func TestServe(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	keys := filepath.Join(t.TempDir(), "keys.json")
	h.must("keys", "generate", "--out", keys)
	h.must("orgs", "create", "--slug", "acme", "--name", "Acme", "--environment", "live")
	c := h.createClient("--org", "acme", "--name", "ERP", "--audience", "pharma", "--scopes", "programme.metrics.read events.subscribe")
	// Configuration from the environment as well as from flags.
	h.env["KEYS_FILE"] = keys
	h.env["ADDR"] = "127.0.0.1:0"
	h.env["METRICS_ADDR"] = "127.0.0.1:0"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	stderr := &logtest.Sink{}
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"authserver", "serve", "--issuer", "http://issuer.test"}, h.getenv, pw, stderr)
		pw.Close()
		done <- err
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("serve printed no address (%v); run: %v; stderr: %s", err, <-done, stderr.String())
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain
	m := regexp.MustCompile(`^authserver listening on (http://127\.0\.0\.1:\d+)\n$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("stdout line %q", line)
	}
	base := m[1]

	for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
		cfg := clientcredentials.Config{ClientID: c.ID, ClientSecret: c.ClientSecret, TokenURL: base + "/api/v1/oauth/token/", Scopes: []string{"events.subscribe"}, AuthStyle: style}
		tok, err := cfg.Token(ctx)
		if err != nil {
			t.Fatalf("token (style %d): %v", style, err)
		}
		if !strings.HasPrefix(tok.AccessToken, "svc_at_") || tok.Extra("scope") != "events.subscribe" {
			t.Errorf("token %+v scope %v", tok, tok.Extra("scope"))
		}
	}
	resp, err := http.Get(base + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&meta)
	resp.Body.Close()
	if meta["issuer"] != "http://issuer.test" {
		t.Errorf("metadata issuer %v", meta["issuer"])
	}

	if out := h.must("healthcheck", "--url", base+"/readyz"); out != "ok\n" {
		t.Errorf("healthcheck: %q", out)
	}
	if _, err := h.run("healthcheck", "--url", base+"/nope"); err == nil || err.Error() != "healthcheck: probe "+base+"/nope: answered 404" {
		t.Errorf("healthcheck of a 404: %v", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run returned %v after cancellation, want nil", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return within 20 s of cancellation")
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("still serving after shutdown")
	}
	logs := stderr.String()
	if !strings.Contains(logs, `"msg":"token service listening"`) || strings.Contains(logs, c.ClientSecret) || strings.Contains(logs, "svc_cs_") {
		t.Errorf("logs:\n%s", logs)
	}
	// One node, REDIS_AUTOPIPELINE unset: automatic pipelining on
	// (serveconfig.Pipelining).
	if !strings.Contains(logs, `"redis_autopipeline":true`) {
		t.Errorf("logs do not say redis_autopipeline true:\n%s", logs)
	}
}

// authenticates reports whether secret authenticates client id, on the
// token service's own path (clients.Store.Authenticate).
func (h *harness) authenticates(ctx context.Context, id, secret string) bool {
	a, err := h.store().Authenticate(ctx, clients.Attempt{ClientID: id, Secret: secret, Address: "192.0.2.1", FailureLimit: 60})
	return err == nil && a.Outcome == clients.Authenticated
}
