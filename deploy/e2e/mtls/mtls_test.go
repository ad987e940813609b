//go:build unix

package mtls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

const (
	audience  = "partner-api"
	pathToken = "/api/v1/oauth/token/"
	pathMe    = "/api/v1/me/"
	scope     = "patients.read"
	// bodyWrongCertificate is the partner API's refusal of a bound token
	// without its certificate (RFC 8705 section 3).
	bodyWrongCertificate = `{"detail":"access token is bound to a client certificate: send it over a connection that presents that certificate"}`
	bodyInvalidClient    = `{"error":"invalid_client","error_description":"Client authentication failed"}`
	bodyInvalidToken     = `{"detail":"invalid, expired or revoked access token"}`
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// freeAddr is a free loopback host:port, from redistest.FreePort's range
// below the kernel's ephemeral ports: a port 0 listener's pick could be
// taken by an outgoing connection before the edge bound it (CI failed
// once: "bind: address already in use" on the edge's TLS port).
func freeAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
}

// stack is one Redis, two pairs of servers (the real binaries) and the
// edge: "direct" servers ending TLS themselves, trusting no proxy, and
// "edge" servers in plain HTTP behind the edge's mutual-TLS site, trusting
// it. Both token services sign with the same keys and issuer, both
// resource servers read them from the edge pair's token service.
type stack struct {
	*e2etest.Servers
	ca     *clientcerttest.Cert
	caFile string
	// direct and edge are the base URLs a partner calls: https, with
	// their auth and api halves for direct; plainEdge is the edge's plain
	// site.
	directAuth, directAPI, edge, plainEdge string
	// directAdmin is the direct token service's admin API, over TLS too.
	directAdmin string
	roots       *x509.CertPool
}

func (s *stack) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(s.Dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// start builds and starts everything on the test Redis, each process
// waited for.
func start(t *testing.T) *stack { return startOn(t, redistest.URL()) }

// startOn is start on the Redis of redisURL (a node, or a Cluster).
func startOn(t *testing.T, redisURL string) *stack {
	t.Helper()
	s := &stack{Servers: e2etest.PrepareServersOn(t, redisURL), ca: clientcerttest.NewCA("Partner CA")}
	s.caFile = s.write(t, "client-ca.pem", s.ca.CertPEM())
	// The servers' certificate, from a CA of its own, which the clients trust.
	serverCA := clientcerttest.NewCA("Server CA")
	server := serverCA.IssueServer()
	certFile, keyFile := s.write(t, "server.pem", server.CertPEM()), s.write(t, "server-key.pem", server.KeyPEM())
	s.write(t, "server-ca.pem", serverCA.CertPEM())
	s.roots = serverCA.Pool()
	keys := filepath.Join(s.Dir, "signing.json")
	s.CLI(t, "keys", "generate", "--out", keys)
	s.CLI(t, "orgs", "create", "--slug", "ward", "--name", "St Elsewhere", "--environment", "live")

	edgePort, edgeTLSPort := freeAddr(t), freeAddr(t)
	_, ep, _ := net.SplitHostPort(edgePort)
	_, etp, _ := net.SplitHostPort(edgeTLSPort)
	s.plainEdge, s.edge = "http://"+edgePort, "https://localhost:"+etp
	issuer := s.edge
	authBin, apiBin := filepath.Join(s.Bin, "authserver"), filepath.Join(s.Bin, "resourceserver")
	authArgs := func(addr string, extra ...string) []string {
		return append([]string{"serve", "--addr", addr, "--metrics-addr", "off", "--admin-addr", "off", "--keys", keys,
			"--issuer", issuer, "--audience", audience, "--client-ca", s.caFile}, extra...)
	}
	edgeAuth, directAuth, directAdmin := freeAddr(t), freeAddr(t), freeAddr(t)
	_, dmp, _ := net.SplitHostPort(directAdmin)
	s.directAdmin = "https://localhost:" + dmp
	pa := e2etest.StartProcess(t, "authserver-edge", s.Env, authBin, authArgs(edgeAuth, "--trusted-proxies", "127.0.0.1/32")...)
	da := e2etest.StartProcess(t, "authserver-direct", s.Env, authBin, authArgs(directAuth, "--tls-cert", certFile, "--tls-key", keyFile,
		"--admin-addr", directAdmin, "--admin-base-url", s.directAdmin)...)
	jwks := "http://" + edgeAuth + "/.well-known/jwks.json"
	apiArgs := func(addr, base string, extra ...string) []string {
		return append([]string{"serve", "--addr", addr, "--metrics-addr", "off", "--jwks-url", jwks, "--issuer", issuer,
			"--audience", audience, "--base-url", base}, extra...)
	}
	edgeAPI, directAPI := freeAddr(t), freeAddr(t)
	_, dap, _ := net.SplitHostPort(directAPI)
	_, dtp, _ := net.SplitHostPort(directAuth)
	s.directAuth, s.directAPI = "https://localhost:"+dtp, "https://localhost:"+dap
	pr := e2etest.StartProcess(t, "resourceserver-edge", s.Env, apiBin, apiArgs(edgeAPI, s.edge, "--trusted-proxies", "127.0.0.1/32")...)
	dr := e2etest.StartProcess(t, "resourceserver-direct", s.Env, apiBin, apiArgs(directAPI, s.directAPI, "--tls-cert", certFile, "--tls-key", keyFile)...)
	port, _ := strconv.Atoi(ep)
	edge := e2etest.StartEdge(t, e2etest.Edge{Home: s.Dir, Port: port, Auth: []string{edgeAuth}, Resource: []string{edgeAPI},
		Env: []string{"EDGE_MTLS=on", "EDGE_TLS_PORT=" + etp, "EDGE_TLS_CERT=" + certFile, "EDGE_TLS_KEY=" + keyFile}})
	e2etest.WaitOK(t, "http://"+edgeAuth+"/readyz", pa)
	e2etest.WaitOK(t, s.plainEdge+"/readyz", edge, pr, pa)
	waitTLS(t, s.directAuth+"/readyz", s.roots, da)
	waitTLS(t, s.directAdmin+"/admin/v1/openapi.json", s.roots, da)
	waitTLS(t, s.directAPI+"/readyz", s.roots, dr)
	waitTLS(t, s.edge+"/readyz", s.roots, edge)
	return s
}

// waitTLS is e2etest.WaitOK over TLS to a server of roots.
func waitTLS(t *testing.T, url string, roots *x509.CertPool, procs ...*e2etest.Process) {
	t.Helper()
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	e2etest.WaitOKWith(t, c, url, procs...)
}

// client registers a tls_client_auth client named by the DNS SAN name.
func (s *stack) client(t *testing.T, name string) string {
	t.Helper()
	var c struct {
		ID string `json:"client_id"`
	}
	out := s.CLI(t, "clients", "create", "--org", "ward", "--name", name, "--audience", "hospital", "--scopes", scope,
		"--auth", "tls_client_auth", "--tls-san-dns", name, "--json")
	if err := json.Unmarshal(out, &c); err != nil || c.ID == "" {
		t.Fatalf("clients create: %q %v", out, err)
	}
	return c.ID
}

// httpClient presents cert (nil: none) to servers of s.roots.
func (s *stack) httpClient(t *testing.T, cert *clientcerttest.Cert) *http.Client {
	tc := &tls.Config{RootCAs: s.roots}
	if cert != nil {
		tc.Certificates = []tls.Certificate{cert.TLS()}
	}
	tr := &http.Transport{TLSClientConfig: tc}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

type answer struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, c *http.Client, method, url, body string, mods ...func(*http.Request)) answer {
	t.Helper()
	a := e2etest.Do(t, c, method, url, body, mods...)
	return answer{a.Status, a.Header, string(a.Body)}
}

// token gets a token of id over c from the token endpoint at base.
func token(t *testing.T, c *http.Client, base, id string) string {
	t.Helper()
	a := do(t, c, http.MethodPost, base+pathToken, e2etest.Form("grant_type", "client_credentials", "client_id", id))
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &tok) != nil || tok.TokenType != "Bearer" {
		t.Fatalf("token at %s: %d %s", base, a.status, a.body)
	}
	return tok.AccessToken
}

// TestStolenBoundToken: a tls_client_auth client's token, obtained over
// its certificate, works with it and only with it: another certificate
// (another CA's of the same name, or a self-signed one), or none, gets
// 401 invalid_token, while the owner keeps working; direct (the servers
// end TLS) and through the edge alike. Another CA's certificate, or
// none, gets no token at all.
func TestStolenBoundToken(t *testing.T) {
	t.Parallel() // every test has its own stack: ports, key prefix, CA
	stolenBoundToken(t, start(t))
}

// TestStolenBoundTokenCluster is TestStolenBoundToken on a Redis Cluster
// (long: it starts six redis-servers).
func TestStolenBoundTokenCluster(t *testing.T) {
	redistest.Long(t)
	t.Parallel()
	stolenBoundToken(t, startOn(t, redistest.StartCluster(t).URL()))
}

func stolenBoundToken(t *testing.T, s *stack) {
	id := s.client(t, "ward.example")
	owner := s.httpClient(t, s.ca.Issue(clientcerttest.Names{CommonName: "ward", DNSNames: []string{"ward.example"}}))
	thief := s.httpClient(t, clientcerttest.NewCA("Thief CA").Issue(clientcerttest.Names{CommonName: "ward", DNSNames: []string{"ward.example"}}))
	self := s.httpClient(t, clientcerttest.SelfSigned(clientcerttest.Names{DNSNames: []string{"ward.example"}}))
	none := s.httpClient(t, nil)
	plain := &http.Client{Timeout: 10 * time.Second}
	for _, path := range []struct{ name, auth, api, plainAPI string }{
		{"direct", s.directAuth, s.directAPI, ""},
		{"edge", s.edge, s.edge, s.plainEdge},
	} {
		t.Run(path.name, func(t *testing.T) {
			tok := token(t, owner, path.auth, id)
			for name, c := range map[string]*http.Client{"another CA's certificate": thief, "no certificate": none} {
				a := do(t, c, http.MethodPost, path.auth+pathToken, e2etest.Form("grant_type", "client_credentials", "client_id", id))
				if a.status != http.StatusUnauthorized || a.body != bodyInvalidClient {
					t.Errorf("token with %s: %d %s", name, a.status, a.body)
				}
			}
			stolen := map[string]*http.Client{"another CA's certificate": thief, "a self-signed certificate": self, "no certificate": none}
			if path.plainAPI != "" {
				stolen["the plain site"] = plain
			}
			for name, c := range stolen {
				api := path.api
				if c == plain {
					api = path.plainAPI
				}
				a := do(t, c, http.MethodGet, api+pathMe, "", e2etest.Bearer(tok))
				if a.status != http.StatusUnauthorized || a.body != bodyWrongCertificate || a.header.Get("WWW-Authenticate") != `Bearer realm="api", error="invalid_token"` {
					t.Errorf("stolen token, %s: %d %s %q", name, a.status, a.body, a.header.Get("WWW-Authenticate"))
				}
				// The owner keeps working, on the same servers.
				if a := do(t, owner, http.MethodGet, path.api+pathMe, "", e2etest.Bearer(tok)); a.status != http.StatusOK {
					t.Fatalf("owner after the thief (%s): %d %s", name, a.status, a.body)
				}
			}
			// A forged Client-Cert field from the client is replaced by the
			// edge's, and ignored direct (no trusted proxy).
			if a := do(t, none, http.MethodGet, path.api+pathMe, "", e2etest.Bearer(tok), e2etest.Header("Client-Cert", ":AAAA:")); a.status != http.StatusUnauthorized {
				t.Errorf("a forged Client-Cert field: %d %s", a.status, a.body)
			}
		})
	}
}

// TestCertificateBoundOperatorToken: an operator's token, requested with
// its secret by x/oauth2 over a connection presenting a certificate, is
// bound to that certificate (RFC 8705 section 3), and the admin API, whose
// listener ends TLS like the token endpoint's, admits it over that
// certificate only: another certificate, or none, gets 401 invalid_token
// in the problem shape.
func TestCertificateBoundOperatorToken(t *testing.T) {
	t.Parallel()
	s := start(t)
	var op struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	if out := s.CLI(t, "operators", "create", "--name", "ops", "--json"); json.Unmarshal(out, &op) != nil || op.Secret == "" {
		t.Fatalf("operators create: %s", out)
	}
	mine := s.httpClient(t, clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "operator"}))
	cc := clientcredentials.Config{ClientID: op.ID, ClientSecret: op.Secret, TokenURL: s.directAuth + pathToken}
	tok, err := cc.Token(context.WithValue(t.Context(), oauth2.HTTPClient, mine))
	if err != nil {
		t.Fatal(err)
	}
	if a := do(t, mine, http.MethodGet, s.directAdmin+"/admin/v1/orgs", "", e2etest.Bearer(tok.AccessToken)); a.status != http.StatusOK {
		t.Fatalf("the admin API over the token's certificate: %d %s", a.status, a.body)
	}
	const refused = `"detail":"the token is bound to a client certificate: call over a connection that presents that certificate"`
	for name, c := range map[string]*http.Client{
		"another certificate": s.httpClient(t, clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "operator"})),
		"no certificate":      s.httpClient(t, nil),
	} {
		a := do(t, c, http.MethodGet, s.directAdmin+"/admin/v1/orgs", "", e2etest.Bearer(tok.AccessToken))
		if a.status != http.StatusUnauthorized || !strings.Contains(a.body, refused) || !strings.Contains(a.body, `"code":"invalid_token"`) ||
			a.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("the admin API over %s: %d %s %s", name, a.status, a.header.Get("Content-Type"), a.body)
		}
	}
}

// TestRenamedCertificate: when a tls_client_auth partner's certificate
// authority issues it a certificate under a new name, the operator changes
// the client's registered name in place (`clients rotate-keys CLIENT_ID
// --tls-san-dns NAME`): the old certificate gets no token and the token it
// got is dead at once, on both paths; the new certificate gets tokens for
// the same client id.
func TestRenamedCertificate(t *testing.T) {
	t.Parallel()
	s := start(t)
	id := s.client(t, "old.ward.example")
	old := s.httpClient(t, s.ca.Issue(clientcerttest.Names{CommonName: "ward", DNSNames: []string{"old.ward.example"}}))
	renamed := s.httpClient(t, s.ca.Issue(clientcerttest.Names{CommonName: "ward", DNSNames: []string{"new.ward.example"}}))
	paths := []struct{ name, auth, api string }{{"direct", s.directAuth, s.directAPI}, {"edge", s.edge, s.edge}}
	before := map[string]string{}
	for _, p := range paths {
		before[p.name] = token(t, old, p.auth, id)
		if a := do(t, renamed, http.MethodPost, p.auth+pathToken, e2etest.Form("grant_type", "client_credentials", "client_id", id)); a.status != http.StatusUnauthorized || a.body != bodyInvalidClient {
			t.Fatalf("%s: the new name before its registration: %d %s", p.name, a.status, a.body)
		}
	}
	s.CLI(t, "clients", "rotate-keys", id, "--tls-san-dns", "new.ward.example")
	for _, p := range paths {
		if a := do(t, old, http.MethodGet, p.api+pathMe, "", e2etest.Bearer(before[p.name])); a.status != http.StatusUnauthorized || a.body != bodyInvalidToken {
			t.Errorf("%s: the old certificate's token after the change: %d %s", p.name, a.status, a.body)
		}
		if a := do(t, old, http.MethodPost, p.auth+pathToken, e2etest.Form("grant_type", "client_credentials", "client_id", id)); a.status != http.StatusUnauthorized || a.body != bodyInvalidClient {
			t.Errorf("%s: the old certificate after the change: %d %s", p.name, a.status, a.body)
		}
		tok := token(t, renamed, p.auth, id)
		if a := do(t, renamed, http.MethodGet, p.api+pathMe, "", e2etest.Bearer(tok)); a.status != http.StatusOK || !strings.Contains(a.body, `"client_id":"`+id+`"`) {
			t.Errorf("%s: the new certificate's token: %d %s", p.name, a.status, a.body)
		}
	}
}

// TestRealClients: curl --cert/--key, golang.org/x/oauth2's
// clientcredentials over an http.Client presenting the certificate, the
// partner SDK with Config.Certificate and Authlib's requests session with
// cert= each get a token by the certificate alone and call /me with it,
// direct and through the edge.
func TestRealClients(t *testing.T) {
	t.Parallel()
	s := start(t)
	id := s.client(t, "lab.example")
	cert := s.ca.Issue(clientcerttest.Names{CommonName: "lab", DNSNames: []string{"lab.example"}})
	certFile, keyFile := s.write(t, "lab.pem", cert.CertPEM()), s.write(t, "lab-key.pem", cert.KeyPEM())
	serverCA := filepath.Join(s.Dir, "server-ca.pem")
	for _, path := range []struct{ name, auth, api string }{{"direct", s.directAuth, s.directAPI}, {"edge", s.edge, s.edge}} {
		t.Run(path.name+"/curl", func(t *testing.T) {
			// The partner guide's own two commands, as written, with its
			// example host replaced by this stack's and the certificate
			// under the file names the guide uses.
			e2etest.RequireCommand(t, "curl")
			dir := t.TempDir()
			for name, data := range map[string][]byte{"client.pem": cert.CertPEM(), "client-key.pem": cert.KeyPEM()} {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			scripts := guideScripts(t)
			sh := func(key string, env ...string) string {
				script := strings.NewReplacer("https://api.example.com"+pathToken, path.auth+pathToken,
					"https://api.example.com"+pathMe, path.api+pathMe).Replace(scripts[key])
				cmd := exec.Command("bash", "-ec", script)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), append(env, "CURL_CA_BUNDLE="+serverCA)...)
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("the guide's %q (%s): %v", key, script, err)
				}
				return string(out)
			}
			var tok struct {
				AccessToken string `json:"access_token"`
			}
			out := sh("mtls token", "CLIENT_ID="+id)
			if json.Unmarshal([]byte(out), &tok) != nil || tok.AccessToken == "" {
				t.Fatalf("the guide's token request: %s", out)
			}
			if out := sh("mtls me", "TOKEN="+tok.AccessToken); !strings.Contains(out, `"client_id":"`+id+`"`) {
				t.Fatalf("the guide's /me call: %s", out)
			}
		})
		t.Run(path.name+"/x-oauth2", func(t *testing.T) {
			hc := s.httpClient(t, cert)
			ctx := context.WithValue(t.Context(), oauth2.HTTPClient, hc)
			cc := clientcredentials.Config{ClientID: id, TokenURL: path.auth + pathToken, AuthStyle: oauth2.AuthStyleInParams}
			resp, err := cc.Client(ctx).Get(path.api + pathMe)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), id) {
				t.Fatalf("/me: %d %s", resp.StatusCode, b)
			}
		})
		t.Run(path.name+"/sdk", func(t *testing.T) {
			tc := cert.TLS()
			c, err := partnerclient.New(partnerclient.Config{BaseURL: path.api, TokenURL: path.auth + pathToken, ClientID: id, Certificate: &tc,
				HTTPClient: s.httpClient(t, cert)})
			if err != nil {
				t.Fatal(err)
			}
			me, err := c.Me(t.Context())
			if err != nil || me.ClientID != id {
				t.Fatalf("Me = %+v, %v", me, err)
			}
		})
		t.Run(path.name+"/authlib", func(t *testing.T) {
			py := "/usr/bin/python3"
			e2etest.RequireCommand(t, py)
			if out, err := exec.Command(py, "-c", "import authlib, requests").CombinedOutput(); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s has no authlib or requests: %s", py, out)
				}
				t.Skipf("%s has no authlib or requests: %s", py, out)
			}
			out, err := exec.Command(py, filepath.Join("python", "client.py"), path.auth+pathToken, path.api+pathMe, id, certFile, keyFile, serverCA).CombinedOutput()
			if err != nil {
				t.Fatalf("client.py: %v\n%s", err, out)
			}
			var got struct {
				TokenType string         `json:"token_type"`
				Status    int            `json:"status"`
				Body      map[string]any `json:"body"`
			}
			if json.Unmarshal(out, &got) != nil || got.Status != 200 || got.TokenType != "Bearer" || got.Body["client_id"] != id {
				t.Fatalf("client.py: %s", out)
			}
		})
	}
}

// guideScripts are the partner guide's (resourceserver/apidocs/guides/
// mtls.md) shell blocks marked "<!-- script: KEY -->", by KEY; the SDK
// suite's TestDocsEqualTheWire leaves those whose KEY starts with "mtls "
// to this suite.
func guideScripts(t *testing.T) map[string]string {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), "resourceserver", "apidocs", "guides", "mtls.md"))
	if err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)<!-- script: (mtls [^>]+?) -->\n```sh\n(.*?)```").FindAllStringSubmatch(string(page), -1) {
		scripts[m[1]] = m[2]
	}
	for _, key := range []string{"mtls token", "mtls me"} {
		if scripts[key] == "" {
			t.Fatalf("mtls.md has no script %q", key)
		}
	}
	return scripts
}
