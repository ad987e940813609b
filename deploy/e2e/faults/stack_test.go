package faults

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/deploy/e2e/inprocess"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

const (
	issuer   = "https://partner-api.faults.test"
	audience = "partner-api"
	formType = "application/x-www-form-urlencoded"
	jsonType = "application/json"

	pathToken      = tokenserver.PathToken
	pathIntrospect = tokenserver.PathIntrospect
	pathMe         = "/api/v1/me/"

	// proxyAddr is the peer of every request: the tests play the edge
	// proxy, which the servers trust, and name the client's address in
	// X-Forwarded-For.
	proxyAddr = "127.0.0.1"
)

// clock is the tests' hand-moved clock.
type clock = testclock.Clock

// stack is the whole service in one process: the token service and the
// resource server on the test Redis under a prefix of the test's own,
// behind the edge routing, served by production's net/http server
// (httpserver.Serve) on a loopback port.
type stack struct {
	t      testing.TB
	rdb    redis.UniversalClient
	prefix string
	store  *clients.Store
	keys   *accesstoken.KeySet
	signer ed25519.PrivateKey // the raw signing key, to craft tokens
	issuer *accesstoken.Issuer

	// tokenNow is the token clock of both servers (iat, exp, expiry):
	// fixed, so a token never expires during a test.
	tokenNow time.Time
	// rate is the clock of every rate limit (per client, per address).
	rate *clock

	authLogs, resLogs, serverLogs *logtest.Sink
	auth                          *tokenserver.Server
	servers                       *inprocess.Servers
	handler                       http.Handler // the edge: both servers
	addr                          string       // host:port of the real server
	// readBeforeAnswer is, for the connection that most recently started
	// answering, how many bytes the server had read from it then.
	readBeforeAnswer atomic.Int64
}

// countingListener records, per connection, how much the server had read
// when it wrote the first byte of its answer.
type countingListener struct {
	net.Listener
	readBeforeAnswer *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, readBeforeAnswer: l.readBeforeAnswer}, nil
}

type countingConn struct {
	net.Conn
	read             atomic.Int64
	answered         sync.Once
	readBeforeAnswer *atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	k, err := c.Conn.Read(p)
	c.read.Add(int64(k))
	return k, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.answered.Do(func() { c.readBeforeAnswer.Store(c.read.Load()) })
	return c.Conn.Write(p)
}

// CloseWrite keeps net/http's lingering close (half-close, then wait)
// working through the wrapper.
func (c *countingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

type stackConfig struct {
	failuresPerMinute int64
}

type option func(*stackConfig)

func newStack(t testing.TB, opts ...option) *stack {
	t.Helper()
	cfg := stackConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	rdb := redistest.Client(t)
	s := &stack{
		t: t, rdb: rdb, prefix: redistest.Prefix(t, rdb),
		tokenNow: time.Now().UTC().Truncate(time.Second),
		rate:     testclock.New(time.Now().UTC().Truncate(time.Millisecond)),
		authLogs: &logtest.Sink{}, resLogs: &logtest.Sink{}, serverLogs: &logtest.Sink{},
	}
	key, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	if err := jwk.Export(key, &s.signer); err != nil {
		t.Fatal(err)
	}
	if s.keys, err = accesstoken.NewKeySet(key); err != nil {
		t.Fatal(err)
	}
	if s.issuer, err = accesstoken.NewIssuer(s.keys, issuer, audience); err != nil {
		t.Fatal(err)
	}
	trust, err := clientip.ParseTrust(proxyAddr + "/32")
	if err != nil {
		t.Fatal(err)
	}
	servers := inprocess.NewServers(t, inprocess.Config{
		Issuer: issuer, Audience: audience, AuthRedis: rdb, KeyPrefix: s.prefix, Keys: s.keys, Trust: trust,
		FailuresPerMinute: cfg.failuresPerMinute, Now: func() time.Time { return s.tokenNow }, RateNow: s.rate.Now,
		AuthLogger: newLogger(t, s.authLogs), APILogger: newLogger(t, s.resLogs),
	})
	s.store, s.auth, s.handler, s.servers = servers.Store, servers.Auth, servers.Edge(), servers

	ln, err := net.Listen("tcp", proxyAddr+":0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- httpserver.Serve(ctx, countingListener{ln, &s.readBeforeAnswer}, s.handler, newLogger(t, s.serverLogs))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	inprocess.NewOrg(t, s.store, "acme", "Acme Hospital")
	return s
}

func newLogger(t testing.TB, w io.Writer) *slog.Logger {
	t.Helper()
	l, err := logging.New(w, "debug")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checked is how many client credentials the token service compared
// against the registry (its partnerapi_client_credentials_checked_total).
func (s *stack) checked() int64 {
	s.t.Helper()
	return s.servers.CredentialsChecked(s.t)
}

// client creates an active client of org "acme" and returns its id and secret.
func (s *stack) client(audience string, scopes ...string) (string, string) {
	s.t.Helper()
	return inprocess.NewClient(s.t, s.store, "acme", audience, scopes...)
}

// token issues a token directly (as the token service would) at the
// stack's token clock.
func (s *stack) token(id, scope string, gen int64) string {
	s.t.Helper()
	tok, _, err := s.issuer.Issue(accesstoken.Grant{ClientID: id, Scope: scope, Generation: gen, Now: s.tokenNow})
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// reply is an answer as the client saw it.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %q", err, r.Body)
	}
	return m
}

// wire sends raw bytes as one request on a new connection to the real
// server and reads the answer. The request is written while the answer is
// read, so an answer given before the body was read is seen.
func (s *stack) wire(raw []byte) (reply, error) {
	conn, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		return reply{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	go func() { _, _ = conn.Write(raw) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}

// wireRequest writes req (as net/http's client would, without its checks
// of header values) to the real server.
func (s *stack) wireRequest(req *http.Request) (reply, error) {
	var buf bytes.Buffer
	if err := req.Write(&buf); err != nil {
		return reply{}, err
	}
	return s.wire(buf.Bytes())
}

// direct serves req by the edge handler itself, as from the proxy,
// bypassing net/http's own parsing and checks.
func (s *stack) direct(req *http.Request) reply {
	req.RemoteAddr = proxyAddr + ":50000"
	if req.Body == nil {
		req.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return reply{Status: res.StatusCode, Header: res.Header, Body: body}
}

// do sends one request through the real server with Go's HTTP client.
func (s *stack) do(req *http.Request) reply {
	s.t.Helper()
	r, err := s.wireRequest(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	return r
}

// newRequest builds a request to the real server; contentType "" sends none.
func (s *stack) newRequest(method, path, contentType string, body io.Reader, mods ...func(*http.Request)) *http.Request {
	s.t.Helper()
	req, err := http.NewRequest(method, "http://"+s.addr+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for _, m := range mods {
		m(req)
	}
	return req
}

func (s *stack) post(path, contentType, body string, mods ...func(*http.Request)) reply {
	s.t.Helper()
	return s.do(s.newRequest(http.MethodPost, path, contentType, strings.NewReader(body), mods...))
}

func (s *stack) get(path string, mods ...func(*http.Request)) reply {
	s.t.Helper()
	return s.do(s.newRequest(http.MethodGet, path, "", nil, mods...))
}

// Request modifiers.

// The request helpers of the kit, by the short names the tables use.
var (
	header   = e2etest.Header
	basic    = e2etest.Basic
	basicRaw = e2etest.BasicRaw
	bearer   = e2etest.Bearer
	form     = e2etest.Form
)

// from names the client's address as the edge proxy does.
func from(addr string) func(*http.Request) { return header("X-Forwarded-For", addr) }

// grant is the minimal token request body.
var grant = form("grant_type", "client_credentials")

// accessToken returns the access_token of a 200 token answer.
func accessToken(t testing.TB, r reply) string {
	t.Helper()
	var got struct {
		AccessToken string `json:"access_token"`
	}
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &got) != nil || !strings.HasPrefix(got.AccessToken, accesstoken.Prefix) {
		t.Fatalf("not a token answer: %d %s", r.Status, r.Body)
	}
	return got.AccessToken
}

// keysUnder lists every key under prefix.
func keysUnder(t testing.TB, rdb redis.UniversalClient, prefix string) []string {
	t.Helper()
	var keys []string
	ctx := context.Background()
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		return iter.Err()
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, n)
		})
	case *redis.Client:
		err = scan(ctx, c)
	default:
		err = errors.New("unsupported Redis client")
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
