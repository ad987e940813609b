//go:build unix

package topology

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// partnerAddr is the partner's own loopback address. It differs from the
// edge's (127.0.0.1), so that a server's log shows whether it took the
// client's address from the edge's X-Forwarded-For.
var partnerAddr = net.IPv4(127, 0, 0, 2)

// newPartnerClient returns the HTTP client of the partner system: every
// connection from partnerAddr.
func newPartnerClient() *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: partnerAddr}, Timeout: 5 * time.Second}
	return &http.Client{
		Timeout:   15 * time.Second,
		Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 4},
	}
}

// credentials are a client's, as the operator CLI prints them.
type credentials struct {
	ID     string `json:"client_id"`
	Secret string `json:"client_secret"`
}

// cli runs the operator CLI (authserver ...) against the topology's Redis
// and returns its standard output.
func (top *topology) cli(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(filepath.Join(top.bin, "authserver"), args...)
	cmd.Env = top.redisEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("authserver %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// cliCredentials runs a CLI command that prints a client with its secret.
func (top *topology) cliCredentials(t *testing.T, args ...string) credentials {
	t.Helper()
	out := top.cli(t, append(args, "--json")...)
	var c credentials
	if err := json.Unmarshal(out, &c); err != nil || c.ID == "" || c.Secret == "" {
		t.Fatalf("authserver %s --json: no client_id and client_secret in %q (%v)", strings.Join(args, " "), out, err)
	}
	return c
}

// createClient creates a hospital client of the test organisation.
func (top *topology) createClient(t *testing.T, scopes string) credentials {
	t.Helper()
	top.clients++
	name := "topology client " + strconv.Itoa(top.clients)
	return top.cliCredentials(t, "clients", "create", "--org", testOrg, "--name", name, "--audience", "hospital", "--scopes", scopes)
}

// answer is an HTTP answer, its body read.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// requestID is the answer's X-Request-Id.
func (a answer) requestID() string { return a.header.Get("X-Request-Id") }

// do sends req with the partner's client.
func (top *topology) do(t *testing.T, req *http.Request) answer {
	t.Helper()
	resp, err := top.partner.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", req.Method, req.URL, err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// clientAuth is how a token request authenticates the client (RFC 6749
// section 2.3.1).
type clientAuth int

const (
	basicAuth clientAuth = iota // HTTP Basic, the preferred way
	formAuth                    // client_id and client_secret form fields
)

// tokenRequest asks the edge for a token with the client credentials grant.
func (top *topology) tokenRequest(t *testing.T, c credentials, how clientAuth, header http.Header) answer {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if how == formAuth {
		form.Set("client_id", c.ID)
		form.Set("client_secret", c.Secret)
	}
	req, err := http.NewRequest(http.MethodPost, top.edge+"/api/v1/oauth/token/", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if how == basicAuth {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	return top.do(t, req)
}

// token gets an access token through the edge and checks the answer.
func (top *topology) token(t *testing.T, c credentials, how clientAuth) string {
	t.Helper()
	a := top.tokenRequest(t, c, how, nil)
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &body) != nil {
		t.Fatalf("token request for %s: %d %s", c.ID, a.status, a.body)
	}
	if !strings.HasPrefix(body.AccessToken, "svc_at_") || body.TokenType != "Bearer" || body.ExpiresIn != 3600 {
		t.Fatalf("token answer: %s", a.body)
	}
	if got := a.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("token answer Cache-Control = %q, want no-store", got)
	}
	return body.AccessToken
}

// wantInvalidClient checks that the credentials get 401 invalid_client.
func (top *topology) wantInvalidClient(t *testing.T, c credentials) {
	t.Helper()
	a := top.tokenRequest(t, c, basicAuth, nil)
	var body struct {
		Error string `json:"error"`
	}
	if a.status != http.StatusUnauthorized || json.Unmarshal(a.body, &body) != nil || body.Error != "invalid_client" {
		t.Fatalf("token request for %s: %d %s, want 401 invalid_client", c.ID, a.status, a.body)
	}
}

// me calls GET /api/v1/me/ at base (the edge or one replica) with token.
func (top *topology) me(t *testing.T, base, token string, header http.Header) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/me/", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return top.do(t, req)
}

// wantMe checks that token describes client id at base.
func (top *topology) wantMe(t *testing.T, base, token, id string) answer {
	t.Helper()
	a := top.me(t, base, token, nil)
	var body struct {
		APIVersion string `json:"api_version"`
		ClientID   string `json:"client_id"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &body) != nil {
		t.Fatalf("GET %s/api/v1/me/: %d %s, want 200", base, a.status, a.body)
	}
	if body.ClientID != id || body.APIVersion != "1" {
		t.Fatalf("GET %s/api/v1/me/: %s, want client_id %s and api_version 1", base, a.body, id)
	}
	return a
}

// wantMeStatus checks the status of GET /api/v1/me/ at base.
func (top *topology) wantMeStatus(t *testing.T, base, token string, want int) answer {
	t.Helper()
	a := top.me(t, base, token, nil)
	if a.status != want {
		t.Fatalf("GET %s/api/v1/me/: %d %s, want %d", base, a.status, a.body, want)
	}
	return a
}
