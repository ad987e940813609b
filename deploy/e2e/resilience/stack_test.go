package resilience

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/deploy/e2e/inprocess"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

const (
	// issuer and audience of the stack's tokens; both servers check them.
	issuer   = "http://resilience.test"
	audience = "partner-api"
	// testOrg is the organisation of the tests' clients.
	testOrg = "resilience-test"
	// highLimit is the per-minute limit (API and token requests) of a
	// client under load: these tests are about Redis failures, not limits.
	highLimit = 1_000_000
)

// The exact answers the tests expect (resourceserver/apidocs/guides/errors.md;
// the servers' own tests pin the same texts).
const (
	tokenUnavailableBody = `{"error":"temporarily_unavailable","error_description":"The service cannot reach its state store; retry after the number of seconds in Retry-After"}`
	meUnavailableBody    = `{"detail":"service temporarily unavailable"}`
	invalidClientBody    = `{"error":"invalid_client","error_description":"Client authentication failed"}`
	invalidTokenBody     = `{"detail":"invalid, expired or revoked access token"}`
	jsonContentType      = "application/json; charset=utf-8"
	unavailableRetry     = "5"
)

// stack is the whole service in this process, as deploy/local wires it,
// except that each server has a Redis client of its own, as two processes
// would: the token service and the resource server on httptest servers
// (loopback), and the operator's store (what the CLI uses) on a third
// client.
type stack struct {
	operator *clients.Store
	keys     *accesstoken.KeySet // the token service's signing keys
	auth     *httptest.Server
	api      *httptest.Server
	http     *http.Client
	logs     *logCounter

	mu      sync.Mutex
	results []result // every answer of every request sent through the stack

	closeOnce sync.Once
	closers   []func()
	hasOrg    bool
}

// startStack wires both servers against the Redis at redisURL. It is
// closed when the test ends, or earlier by close.
func startStack(t *testing.T, redisURL string) *stack {
	t.Helper()
	s := &stack{logs: &logCounter{n: map[string]int{}}}
	t.Cleanup(s.close)
	logger := slog.New(s.logs)
	open := func() redis.UniversalClient {
		t.Helper()
		// The production path: redisconn's fail-fast timeouts and retries.
		rdb, err := redisconn.Open(redisURL)
		if err != nil {
			t.Fatal(err)
		}
		s.closers = append(s.closers, func() { _ = rdb.Close() })
		return rdb
	}

	servers := inprocess.NewServers(t, inprocess.Config{
		Issuer: issuer, Audience: audience, AuthRedis: open(), APIRedis: open(),
		// The tests present wrong and revoked secrets on purpose; the
		// per-address limit of failures is not what they are about.
		FailuresPerMinute: highLimit,
		AuthLogger:        logger, APILogger: logger, DocsBase: issuer,
	})
	s.keys = servers.Keys
	auth, res := servers.Auth, servers.API
	s.operator = clients.NewStore(open(), "", nil)

	s.auth = httptest.NewServer(auth)
	s.api = httptest.NewServer(res)
	transport := &http.Transport{MaxIdleConnsPerHost: 32}
	s.http = &http.Client{Timeout: 15 * time.Second, Transport: transport}
	// Closed in this order: idle client connections, the servers (which
	// wait for their in-flight requests), then the Redis clients.
	s.closers = append([]func(){transport.CloseIdleConnections, s.auth.Close, s.api.Close}, s.closers...)
	return s
}

// close stops the servers and closes every connection and Redis client.
func (s *stack) close() {
	s.closeOnce.Do(func() {
		for _, c := range s.closers {
			c()
		}
	})
}

// credentials are a client's id and current secret.
type credentials struct {
	ID     string
	Secret string
}

// createClient creates a client of the test organisation (created with
// the first client) whose limits are high enough for load.
func (s *stack) createClient(t *testing.T, name string) credentials {
	t.Helper()
	ctx := t.Context()
	if !s.hasOrg {
		if _, err := s.operator.CreateOrg(ctx, clients.OrgSpec{Slug: testOrg, Name: "Resilience test", Environment: clients.EnvironmentSandbox}); err != nil {
			t.Fatal(err)
		}
		s.hasOrg = true
	}
	c, secret, err := s.operator.CreateClient(ctx, clients.ClientSpec{
		OrgSlug: testOrg, Name: name, Audience: clients.AudienceHospital,
		Scopes: []string{clients.ScopeEventsSubscribe}, RateLimitPerMinute: highLimit,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.operator.SetTokenRateLimit(ctx, c.ID, highLimit); err != nil {
		t.Fatal(err)
	}
	return credentials{ID: c.ID, Secret: secret}
}

// kind is the endpoint a request went to.
type kind string

const (
	tokenRequest kind = "token"
	meRequest    kind = "me"
)

// result is one request and its answer, body read.
type result struct {
	kind   kind
	sent   time.Time // just before the request was sent
	recv   time.Time // once the whole answer was read
	status int       // 0 when the request failed
	header http.Header
	body   []byte
	err    error
}

func (r result) String() string {
	if r.err != nil {
		return fmt.Sprintf("%s: %v", r.kind, r.err)
	}
	return fmt.Sprintf("%s: %d %s (%v)", r.kind, r.status, bytes.TrimSpace(r.body), r.recv.Sub(r.sent).Round(time.Millisecond))
}

// token asks for a token with HTTP Basic authentication. It is safe to call
// from any goroutine.
func (s *stack) token(c credentials) result {
	req, err := http.NewRequest(http.MethodPost, s.auth.URL+tokenserver.PathToken, strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		return s.record(result{kind: tokenRequest, err: err})
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	return s.do(tokenRequest, req)
}

// me calls GET /api/v1/me/ with token. It is safe to call from any
// goroutine.
func (s *stack) me(token string) result {
	req, err := http.NewRequest(http.MethodGet, s.api.URL+"/api/v1/me/", nil)
	if err != nil {
		return s.record(result{kind: meRequest, err: err})
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return s.do(meRequest, req)
}

func (s *stack) do(k kind, req *http.Request) result {
	r := result{kind: k, sent: time.Now()}
	resp, err := s.http.Do(req)
	if err != nil {
		r.err, r.recv = err, time.Now()
		return s.record(r)
	}
	r.body, r.err = io.ReadAll(resp.Body)
	resp.Body.Close()
	r.recv, r.status, r.header = time.Now(), resp.StatusCode, resp.Header
	return s.record(r)
}

func (s *stack) record(r result) result {
	s.mu.Lock()
	s.results = append(s.results, r)
	s.mu.Unlock()
	return r
}

// answers returns every result recorded so far.
func (s *stack) answers() []result {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]result(nil), s.results...)
}

// get is a probe GET that is not recorded (readiness).
func (s *stack) get(url string) int {
	resp, err := s.http.Get(url)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// waitReady polls both servers' /readyz every 20 ms until both answer 200.
func (s *stack) waitReady(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	return testwait.Eventually(t, within, "both servers ready", func() bool {
		return s.get(s.auth.URL+"/readyz") == http.StatusOK && s.get(s.api.URL+"/readyz") == http.StatusOK
	})
}

// accessToken returns the access token of a 200 token answer, or "".
func accessToken(r result) string {
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &body) != nil ||
		!strings.HasPrefix(body.AccessToken, accesstoken.Prefix) || body.TokenType != "Bearer" || body.ExpiresIn != 3600 {
		return ""
	}
	return body.AccessToken
}

// mustToken gets a token for c, failing the test otherwise.
func (s *stack) mustToken(t *testing.T, c credentials) string {
	t.Helper()
	r := s.token(c)
	tok := accessToken(r)
	if tok == "" {
		t.Fatalf("token for %s: %v", c.ID, r)
	}
	return tok
}

// describes reports whether r is a 200 GET /api/v1/me/ of client id.
func describes(r result, id string) bool {
	var body struct {
		APIVersion string `json:"api_version"`
		ClientID   string `json:"client_id"`
	}
	return r.status == http.StatusOK && json.Unmarshal(r.body, &body) == nil && body.ClientID == id && body.APIVersion == "1"
}

// unavailableProblem says what is wrong with r as the documented 503 of its
// endpoint, or "" when it is exactly that: the token endpoint's OAuth error
// temporarily_unavailable, /me's {"detail"}, both with Retry-After and
// nothing that invites the client to retry its credentials.
func unavailableProblem(r result) string {
	want := map[string]string{"Content-Type": jsonContentType, "Retry-After": unavailableRetry, "WWW-Authenticate": ""}
	body := meUnavailableBody
	if r.kind == tokenRequest {
		body = tokenUnavailableBody
		want["Cache-Control"], want["Pragma"] = "no-store", "no-cache"
	}
	var problems []string
	if r.status != http.StatusServiceUnavailable {
		problems = append(problems, fmt.Sprintf("status %d", r.status))
	}
	if string(r.body) != body {
		problems = append(problems, fmt.Sprintf("body %s, want %s", r.body, body))
	}
	for k, v := range want {
		if got := r.header.Get(k); got != v {
			problems = append(problems, fmt.Sprintf("%s: %q, want %q", k, got, v))
		}
	}
	return strings.Join(problems, "; ")
}

// refusalProblem says what is wrong with r as the 401 of a dead credential:
// invalid_client on the token endpoint, the invalid_token {"detail"} on /me.
func refusalProblem(r result) string {
	body := invalidTokenBody
	if r.kind == tokenRequest {
		body = invalidClientBody
	}
	if r.status != http.StatusUnauthorized || string(r.body) != body {
		return fmt.Sprintf("%v, want 401 %s", r, body)
	}
	return ""
}

// tally counts answers by endpoint and status ("token 200": n).
func tally(rs []result) map[string]int {
	n := map[string]int{}
	for _, r := range rs {
		if r.err != nil {
			n[string(r.kind)+" error"]++
			continue
		}
		n[fmt.Sprintf("%s %d", r.kind, r.status)]++
	}
	return n
}

// formatTally prints a tally in a stable order.
func formatTally(n map[string]int) string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", k, n[k])
	}
	return b.String()
}

// logCounter is the servers' slog handler: it counts warning and error
// records by level and message, so a test can tell a panic (recovered and
// logged at error level) from the expected Redis warnings.
type logCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (h *logCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *logCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.n[r.Level.String()+" "+r.Message]++
	h.mu.Unlock()
	return nil
}

func (h *logCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCounter) WithGroup(string) slog.Handler      { return h }

func (h *logCounter) counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.n))
	for k, v := range h.n {
		out[k] = v
	}
	return out
}

// settleGoroutines polls every 20 ms until at most baseline+slack
// goroutines run, and returns how many do then. Past within, it fails the
// test with every goroutine's stack.
func settleGoroutines(t *testing.T, baseline, slack int, within time.Duration) int {
	t.Helper()
	n := 0
	testwait.Until(t, within, fmt.Sprintf("at most %d goroutines after closing everything (%d before the servers started, slack %d)", baseline+slack, baseline, slack), func() error {
		if n = runtime.NumGoroutine(); n <= baseline+slack {
			return nil
		}
		return goroutineLeak(n)
	})
	return n
}

// goroutineLeak is settleGoroutines' last sighting: its text, read only
// when the wait fails, holds every goroutine's stack.
type goroutineLeak int

func (n goroutineLeak) Error() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return fmt.Sprintf("goroutine leak: %d goroutines:\n%s", int(n), buf)
}
