package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// getenvOf serves an environment from a map.
func getenvOf(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// The whole binary: run serve on a free port with a Redis and a JWKS of the
// test's own, poll /healthz, then call the API with a real token, and shut
// down on cancel.
func TestRunServe(t *testing.T) {
	redis := redistest.StartServer(t)
	rdb, err := redisconn.Open(redis.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	const prefix = "rs-test:" // REDIS_KEY_PREFIX, shared with the registry
	store := clients.NewStore(rdb, prefix, nil)
	ctx := context.Background()
	if _, err := store.CreateOrg(ctx, clients.OrgSpec{Slug: "st-marys", Name: "St Mary's", Environment: clients.EnvironmentLive}); err != nil {
		t.Fatal(err)
	}
	client, _, err := store.CreateClient(ctx, clients.ClientSpec{OrgSlug: "st-marys", Name: "EHR", Audience: clients.AudienceHospital, Scopes: []string{clients.ScopePatientsRead}})
	if err != nil {
		t.Fatal(err)
	}

	// The token service's side: a key set, its JWKS endpoint and an issuer.
	key, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	keys, _ := accesstoken.NewKeySet(key)
	const issuerURL = "http://auth.test"
	issuer, _ := accesstoken.NewIssuer(keys, issuerURL, "partner-api")
	jwksDoc, _ := keys.PublicJSON()
	jwksSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(jwksDoc)
	}))
	defer jwksSrv.Close()

	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr logtest.Sink
	done := make(chan error, 1)
	go func() {
		done <- run(runCtx, []string{"resourceserver", "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--jwks-url", jwksSrv.URL + "/.well-known/jwks.json", "--base-url", "http://api.test"},
			getenvOf(map[string]string{"REDIS_URL": redis.URL(), "REDIS_KEY_PREFIX": prefix, "ISSUER": issuerURL, "LOG_LEVEL": "debug"}), &stdout, &stderr)
	}()

	base := waitListening(t, &stdout, done)
	waitStatus(t, base+"/healthz", http.StatusOK)
	waitStatus(t, base+"/readyz", http.StatusOK) // JWKS fetched, Redis answers

	// The container probe, finding the port through ADDR as in compose.
	var out logtest.Sink
	port := base[strings.LastIndex(base, ":")+1:]
	if err := run(ctx, []string{"resourceserver", "healthcheck"}, getenvOf(map[string]string{"ADDR": ":" + port}), &out, &out); err != nil || out.String() != "ok\n" {
		t.Errorf("healthcheck: %v %q", err, out.String())
	}

	tok, _, err := issuer.Issue(accesstoken.Grant{ClientID: client.ID, Scope: "patients.read", Generation: client.Generation, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/me/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var me map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&me)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || me["client_id"] != client.ID || me["environment"] != "live" ||
		me["organization"].(map[string]any)["slug"] != "st-marys" || resp.Header.Get("RateLimit-Limit") != "120" {
		t.Fatalf("GET /api/v1/me/: %d %v %v", resp.StatusCode, me, resp.Header)
	}
	requestID := resp.Header.Get("X-Request-Id")

	// A revocation through the registry (what "authserver clients revoke"
	// runs) shows on the next request.
	if _, err := store.Revoke(ctx, client.ID); err != nil {
		t.Fatal(err)
	}
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Bearer realm="api", error="invalid_token"` {
		t.Fatalf("after revocation: %d %v", resp.StatusCode, resp.Header)
	}
	// Documentation, with no token.
	resp, err = http.Get(base + "/llms.txt")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte("# ")) {
		t.Fatalf("/llms.txt: %d %.40q", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	// JSON logs on stderr, the request id on the request's records, and
	// never the token.
	logs := stderr.String()
	if !strings.Contains(logs, `"request_id":"`+requestID+`"`) || !strings.Contains(logs, `"msg":"shutting down"`) {
		t.Errorf("logs:\n%s", logs)
	}
	if strings.Contains(logs, tok) {
		t.Error("the token was logged")
	}
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("not a JSON record: %s", line)
		}
	}
}

// The server starts while the JWKS is unreachable: alive, not ready, API
// 503; and it stops cleanly.
func TestRunServeWithoutKeys(t *testing.T) {
	redis := redistest.StartServer(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/.well-known/jwks.json"
	dead.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr logtest.Sink
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"resourceserver", "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--jwks-url", deadURL, "--base-url", "http://api.test"},
			getenvOf(map[string]string{"REDIS_URL": redis.URL()}), &stdout, &stderr)
	}()
	base := waitListening(t, &stdout, done)
	waitStatus(t, base+"/healthz", http.StatusOK)
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || string(body) != `{"detail":"signing keys unavailable"}` {
		t.Errorf("/readyz: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/me/", nil)
	req.Header.Set("Authorization", "Bearer svc_at_eyJhbGciOiJFZERTQSIsImtpZCI6IngiLCJ0eXAiOiJhdCtqd3QifQ.e30.c2ln")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "5" {
		t.Errorf("/api/v1/me/ without keys: %d %v", resp.StatusCode, resp.Header)
	}
	var out logtest.Sink
	if err := run(ctx, []string{"resourceserver", "healthcheck", "--url", base + "/readyz"}, getenvOf(nil), &out, &out); err == nil || !strings.Contains(err.Error(), "answered 503") {
		t.Errorf("healthcheck of a server without keys: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // substrings of the error
	}{
		{"no command", []string{"resourceserver"}, nil, []string{"no command"}},
		{"unknown command", []string{"resourceserver", "nope"}, nil, []string{`unknown command "nope"`}},
		{"stray argument", []string{"resourceserver", "serve", "extra"}, nil, []string{"serve takes 0 argument(s), got 1 (run 'resourceserver serve --help')"}},
		{"unknown flag", []string{"resourceserver", "serve", "--nope"}, nil, []string{"flag provided but not defined"}},
		{"healthcheck argument", []string{"resourceserver", "healthcheck", "extra"}, nil, []string{"healthcheck takes 0 argument(s), got 1"}},
		{"healthcheck, nothing listening", []string{"resourceserver", "healthcheck", "--url", "http://127.0.0.1:1/readyz"}, nil, []string{"healthcheck:"}},
		{
			"every problem at once",
			[]string{"resourceserver", "serve", "--addr", "nonsense", "--jwks-url", "ftp://x", "--audience", " ", "--log-level", "loud"},
			map[string]string{"TRUSTED_PROXIES": "10.0.0.0/8, bad", "REDIS_URL": "redis://user:hunter2@[::1", "ISSUER": " ", "BASE_URL": "nope"},
			[]string{`--addr (ADDR) "nonsense"`, `--jwks-url (JWKS_URL) "ftp://x"`, "--issuer (ISSUER) is required", "--audience (AUDIENCE) is required", "REDIS_URL",
				`trusted proxy "bad"`, `log level "loud"`, `--base-url (BASE_URL) "nope"`},
		},
		{"boolean variable, not a boolean", []string{"resourceserver", "serve"}, map[string]string{"REDIS_AUTOPIPELINE": "yes"},
			[]string{`REDIS_AUTOPIPELINE="yes": want auto, true or false (or 1 or 0)`}},
		// Issue 59 point 8: the public base URL is configuration, never a
		// request's Host.
		{"no public base URL", []string{"resourceserver", "serve"}, nil,
			[]string{"--base-url (BASE_URL) is required: the public base URL partners call (e.g. https://api.example.com), which a DPoP proof's htu must name (RFC 9449 section 4.3)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr logtest.Sink
			err := run(context.Background(), tt.args, getenvOf(tt.env), &stdout, &stderr)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error()+stderr.String(), "hunter2") {
				t.Error("the Redis password was printed")
			}
		})
	}
	// Help is not an error.
	var stdout, stderr logtest.Sink
	if err := run(context.Background(), []string{"resourceserver", "serve", "-h"}, getenvOf(map[string]string{"REDIS_URL": "redis://u:hunter2@h:1"}), &stdout, &stderr); err != nil {
		t.Errorf("serve -h: %v", err)
	}
	if !strings.Contains(stdout.String(), "  --jwks-url string ") || strings.Contains(stdout.String(), "hunter2") || stderr.String() != "" {
		t.Errorf("serve -h printed:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

var listeningRE = regexp.MustCompile(`listening on (http://\S+)`)

// waitListening waits for run to print its address.
func waitListening(t *testing.T, stdout *logtest.Sink, done <-chan error) string {
	t.Helper()
	var base string
	testwait.Eventually(t, 10*time.Second, "run printed its address", func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned early: %v", err)
		default:
		}
		if m := listeningRE.FindStringSubmatch(stdout.String()); m != nil {
			base = m[1]
		}
		return base != ""
	})
	return base
}

// waitStatus polls url until it answers status.
func waitStatus(t *testing.T, url string, status int) {
	t.Helper()
	testwait.Until(t, 10*time.Second, fmt.Sprintf("%s answers %d", url, status), func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
}

// serve writes one stream of JSON records: go-redis's own lines (a failed
// dial while Redis is down) come through slog as component "redis".
func TestRunServeOneLogStream(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/.well-known/jwks.json"
	dead.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr logtest.Sink
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"resourceserver", "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "off", "--jwks-url", deadURL, "--base-url", "http://api.test"},
			getenvOf(map[string]string{"REDIS_URL": "redis://" + freeAddr(t) + "/0"}), &stdout, &stderr)
	}()
	base := waitListening(t, &stdout, done)
	// /readyz pings Redis, which is down: go-redis fails to dial and says
	// so, in the dial that request makes.
	if resp, err := http.Get(base + "/readyz"); err == nil {
		resp.Body.Close()
	}
	stderr.WaitFor(`"component":"redis"`, 10*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	fromRedis := 0
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("not a JSON record: %s", line)
			continue
		}
		if rec["component"] == "redis" {
			fromRedis++
			if msg, _ := rec["msg"].(string); rec["level"] != "WARN" || !strings.Contains(msg, "failed to dial") {
				t.Errorf("go-redis record: %v", rec)
			}
		}
	}
	if fromRedis == 0 {
		t.Errorf("no go-redis record in:\n%s", stderr.String())
	}
}

// freeAddr is a loopback address where nothing listens.
func freeAddr(t *testing.T) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
}
