//go:build unix

package topology

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

const (
	// audience is the "aud" of the topology's tokens.
	audience = "partner-api"
	// testOrg is the organisation of the journey's clients.
	testOrg = "topology-test"
	// rateLimit is the API requests per minute of the rate-limited client.
	rateLimit = 4
	// edgeAddr is the edge's address, the only trusted proxy.
	edgeAddr = "127.0.0.1"
)

// TestTopology runs the partner journey through the edge, kills one replica
// of each pool, and runs it again.
func TestTopology(t *testing.T) {
	t.Parallel() // beside the other quick tests; the long ones run alone first
	if testing.Short() {
		t.Skip("-short: this test builds the servers and starts seven processes")
	}
	requireCommand(t, "redis-server")
	requireCommand(t, "caddy")
	top := startTopology(t, 2, 2)

	if !t.Run("journey", func(t *testing.T) { journey(t, top) }) {
		return
	}
	top.auth[0].Kill()
	top.resource[0].Kill()
	t.Run("journey without auth-1 and resource-1", func(t *testing.T) { journey(t, top) })
}

// topology is the running system.
type topology struct {
	home     string // HOME of every process, and the key set's directory
	bin      string // directory of the authserver and resourceserver binaries
	redisURL string
	prefix   string // REDIS_KEY_PREFIX of every process
	edge     string // the one base URL: http://127.0.0.1:PORT
	edgeProc *process
	auth     []*server
	resource []*server
	partner  *http.Client
	clients  int // clients created so far, for their names
}

// startTopology starts Redis, nAuth token service replicas, the edge and
// nResource resource server replicas, and waits until the edge routes to
// both pools.
func startTopology(t *testing.T, nAuth, nResource int) *topology {
	t.Helper()
	// The durability the compose file configures (deploy/docs/docker-compose.md, "Redis durability").
	return startTopologyOn(t, nAuth, nResource, redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always").URL(), "")
}

// startTopologyOn is startTopology on the Redis at redisURL, every key under
// prefix (REDIS_KEY_PREFIX; "" for a Redis of the test's own).
func startTopologyOn(t *testing.T, nAuth, nResource int, redisURL, prefix string) *topology {
	t.Helper()
	dir := t.TempDir()
	top := &topology{home: dir, bin: builtServers(t), partner: newPartnerClient(), redisURL: redisURL, prefix: prefix}

	keys := filepath.Join(dir, "jwks.json")
	top.cli(t, "keys", "generate", "--out", keys)
	top.cli(t, "orgs", "create", "--slug", testOrg, "--name", "Topology test", "--environment", "sandbox")
	top.cli(t, "sandbox", "seed") // what the compose init job runs

	edgePort := redistest.FreePort(t)
	top.edge = "http://" + edgeAddr + ":" + strconv.Itoa(edgePort)
	// SHUTDOWN_DELAY: a replica stopped with SIGTERM fails /readyz for 5 s
	// before it closes, more than the edge's health interval (2 s) and
	// timeout (1 s) together, so the edge stops sending to it first
	// (TestRollingRestart; the others kill with SIGKILL).
	env := append(top.redisEnv(), "TRUSTED_PROXIES="+edgeAddr+"/32", "LOG_LEVEL=info", "SHUTDOWN_DELAY=5s")

	for i := range nAuth {
		top.auth = append(top.auth, top.startServer(t, "auth-"+strconv.Itoa(i+1), env, "authserver",
			"--keys", keys, "--issuer", top.edge, "--audience", audience))
	}
	// The resource servers' ports are chosen now, for the edge's
	// configuration; they start after the edge, since they fetch the JWKS
	// through it.
	resourcePorts := make([]int, nResource)
	for i := range resourcePorts {
		resourcePorts[i] = redistest.FreePort(t)
	}
	edge := top.startEdge(t, edgePort, hostPorts(top.auth), loopbackHostPorts(resourcePorts))
	top.edgeProc = edge
	for _, s := range top.auth {
		waitOK(t, s.base+"/readyz", s.process)
	}
	waitOK(t, top.edge+"/.well-known/jwks.json", edge)
	for i, port := range resourcePorts {
		top.resource = append(top.resource, top.startServerOn(t, port, "resource-"+strconv.Itoa(i+1), env, "resourceserver",
			"--jwks-url", top.edge+"/.well-known/jwks.json", "--issuer", top.edge, "--audience", audience, "--base-url", top.edge))
	}
	for _, s := range top.resource {
		waitOK(t, s.base+"/readyz", s.process, edge)
	}
	waitOK(t, top.edge+"/readyz", edge)
	// The edge's active health checks may have seen a replica before it was
	// ready; the journey starts once the edge routes to every replica.
	waitRoutes(t, top.edge+"/.well-known/jwks.json", top.auth)
	waitRoutes(t, top.edge+"/readyz", top.resource)
	return top
}

// redisEnv is the environment of every server and CLI process.
func (top *topology) redisEnv() []string {
	return append(baseEnv(top.home), "REDIS_URL="+top.redisURL, "REDIS_KEY_PREFIX="+top.prefix)
}

// waitRoutes polls url, a path the edge routes to one of servers, until
// every one of them has answered it 200, failing the test after
// e2etest.StartTimeout.
func waitRoutes(t *testing.T, url string, servers []*server) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	seen := map[*server]bool{}
	testwait.Eventually(t, e2etest.StartTimeout, "the edge routes "+url+" to every replica", func() bool {
		resp, err := client.Get(url)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			s, _ := servedBy(t, servers, resp.Header.Get("X-Request-Id"))
			seen[s] = true
		}
		return len(seen) == len(servers)
	})
}

// startServer starts `BIN serve --addr 127.0.0.1:PORT args...` on a free port.
func (top *topology) startServer(t *testing.T, name string, env []string, bin string, args ...string) *server {
	t.Helper()
	return top.startServerOn(t, redistest.FreePort(t), name, env, bin, args...)
}

func (top *topology) startServerOn(t *testing.T, port int, name string, env []string, bin string, args ...string) *server {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// Every replica's metrics on a port of its own, as on separate hosts.
	metricsAddr := "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
	flags := []string{"serve", "--addr", addr, "--metrics-addr", metricsAddr}
	var admin string
	if bin == "authserver" {
		admin = "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
		flags = append(flags, "--admin-addr", admin)
		admin = "http://" + admin
	}
	p := startProcess(t, name, env, filepath.Join(top.bin, bin), append(flags, args...)...)
	return &server{process: p, base: "http://" + addr, metrics: metricsAddr, admin: admin, port: port, bin: bin, env: env, args: args}
}

// startEdge runs caddy with deploy/Caddyfile, the file the compose edge
// uses, its environment switching it to static upstreams on loopback.
func (top *topology) startEdge(t *testing.T, port int, auth, resource []string) *process {
	t.Helper()
	return e2etest.StartEdge(t, e2etest.Edge{Home: top.home, Bind: edgeAddr, Port: port, Auth: auth, Resource: resource})
}

// hostPorts are the servers' host:port.
func hostPorts(servers []*server) []string {
	out := make([]string, len(servers))
	for i, s := range servers {
		out[i] = strings.TrimPrefix(s.base, "http://")
	}
	return out
}

func loopbackHostPorts(ports []int) []string {
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return out
}

// running are the servers whose process is alive.
func running(servers []*server) []*server {
	var out []*server
	for _, s := range servers {
		if s.Running() {
			out = append(out, s)
		}
	}
	return out
}

// journey is the partner's whole journey, through the edge, with the
// operator's CLI acting between the steps. Where a step must hold on every
// replica, it is also checked on each running replica directly.
func journey(t *testing.T, top *topology) {
	resources := running(top.resource)
	// Enough requests through the round-robin edge to reach every replica.
	everyReplica := 2 * len(top.resource)

	c := top.createClient(t, "patients.read referrals.write")

	// A token with HTTP Basic and one with form fields; both work.
	basic := top.token(t, c, basicAuth)
	form := top.token(t, c, formAuth)
	for _, tok := range []string{basic, form} {
		top.wantMe(t, top.edge, tok, c.ID)
	}
	for _, s := range resources {
		top.wantMe(t, s.base, basic, c.ID)
	}
	checkForwarding(t, top, basic)

	// Rotation: every token of the old secret stops working at once, on
	// every replica; the old secret is refused; the new one works.
	rotated := top.cliCredentials(t, "clients", "rotate-secret", c.ID)
	for _, s := range resources {
		top.wantMeStatus(t, s.base, basic, http.StatusUnauthorized)
		top.wantMeStatus(t, s.base, form, http.StatusUnauthorized)
	}
	for range everyReplica {
		top.wantMeStatus(t, top.edge, basic, http.StatusUnauthorized)
	}
	top.wantInvalidClient(t, c)
	fresh := top.token(t, rotated, basicAuth)
	for _, s := range resources {
		top.wantMe(t, s.base, fresh, c.ID)
	}
	for range everyReplica {
		top.wantMe(t, top.edge, fresh, c.ID)
	}

	// Revocation: token requests get invalid_client, tokens get 401.
	top.cli(t, "clients", "revoke", c.ID)
	top.wantInvalidClient(t, rotated)
	for _, s := range resources {
		top.wantMeStatus(t, s.base, fresh, http.StatusUnauthorized)
	}
	top.wantMeStatus(t, top.edge, fresh, http.StatusUnauthorized)

	// The rate limit is one for all replicas: N requests spread over them
	// by the edge pass, the next one is refused, by every replica.
	limited := top.createClient(t, "events.subscribe")
	tok := top.token(t, limited, formAuth)
	top.cli(t, "clients", "set-rate-limit", limited.ID, strconv.Itoa(rateLimit))
	served := map[*server]int{}
	for range rateLimit {
		a := top.wantMe(t, top.edge, tok, limited.ID)
		s, _ := servedBy(t, top.resource, a.requestID())
		served[s]++
	}
	for _, s := range resources {
		if served[s] == 0 {
			t.Errorf("%s served none of the %d requests: %v", s, rateLimit, served)
		}
	}
	// Retry-After is the 60 of resourceserver/apidocs/guides/rate-limits.md
	// (Limits) on the Redis clock too, and RateLimit-Reset says the same
	// (never 61, never less beside 60).
	a := top.wantMeStatus(t, top.edge, tok, http.StatusTooManyRequests)
	if a.header.Get("Retry-After") != "60" || a.header.Get("RateLimit-Reset") != "60" {
		t.Errorf("429 with Retry-After %q and RateLimit-Reset %q, want 60 and 60: %v", a.header.Get("Retry-After"), a.header.Get("RateLimit-Reset"), a.header)
	}
	for _, s := range resources {
		top.wantMeStatus(t, s.base, tok, http.StatusTooManyRequests)
	}
}

// uuidPattern is the form of the edge's request ids ({http.request.uuid}).
var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// checkForwarding checks the edge's headers and the servers' trust in them:
// through the edge, the servers log the edge's request id and the partner's
// address from X-Forwarded-For, whatever the partner sent in those headers;
// straight from the partner, they believe neither header.
func checkForwarding(t *testing.T, top *topology, token string) {
	t.Helper()
	const spoofedID, spoofedAddr = "chosen-by-the-client", "203.0.113.7"
	forged := http.Header{"X-Request-Id": {spoofedID}, "X-Forwarded-For": {spoofedAddr}}
	want := partnerAddr.String()

	check := func(what string, a answer, servers []*server, viaEdge bool) {
		t.Helper()
		id := a.requestID()
		switch {
		case id == spoofedID:
			t.Errorf("%s: the client's X-Request-Id was believed", what)
		case viaEdge && !uuidPattern.MatchString(id):
			t.Errorf("%s: X-Request-Id %q is not the edge's", what, id)
		}
		s, rec := servedBy(t, servers, id)
		if got := clientAddress(rec); got != want {
			t.Errorf("%s: %s logged client address %v, want the partner's %s", what, s, got, want)
		}
	}

	check("token request through the edge", top.tokenRequest(t, credentials{ID: "svc_unknown", Secret: "x"}, basicAuth, forged),
		top.auth, true)
	check("GET /api/v1/me/ through the edge", top.me(t, top.edge, token, forged), top.resource, true)
	direct := running(top.resource)[0]
	check("GET /api/v1/me/ straight to "+direct.Name, top.me(t, direct.base, token, forged), top.resource, false)
}

// clientAddress is the client address an access record names (both
// services log it as "client_ip").
func clientAddress(rec map[string]any) any { return rec["client_ip"] }
