package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// hydraScope is the scope the Hydra clients are created with.
const hydraScope = "read"

// startHydra starts Ory Hydra (--hydra-bin) the way the earlier hand
// measurements did: serve all --dev, DSN=memory (in-process SQLite), opaque
// tokens, its public and admin APIs on free loopback ports, logging at
// warn so that its request log does not cost it throughput.
func (s *stack) startHydra(ctx context.Context) error {
	public, err := freePort()
	if err != nil {
		return err
	}
	admin, err := freePort()
	if err != nil {
		return err
	}
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return err
	}
	s.hydraPublicURL = "http://127.0.0.1:" + strconv.Itoa(public)
	s.hydraAdminURL = "http://127.0.0.1:" + strconv.Itoa(admin)
	env := []string{
		"DSN=memory",
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_PUBLIC_PORT=" + strconv.Itoa(public),
		"SERVE_ADMIN_HOST=127.0.0.1", "SERVE_ADMIN_PORT=" + strconv.Itoa(admin),
		"URLS_SELF_ISSUER=" + s.hydraPublicURL,
		"SECRETS_SYSTEM=" + hex.EncodeToString(secret),
		"STRATEGIES_ACCESS_TOKEN=opaque",
		// The tokens fetched beforehand must outlive the whole run.
		"TTL_ACCESS_TOKEN=24h",
		"LOG_LEVEL=warn",
		"SQA_OPT_OUT=true",
	}
	if s.hydra, err = startProcess("hydra", s.dir, s.cfg.HydraBin, []string{"serve", "all", "--dev", "--sqa-opt-out"}, env); err != nil {
		return err
	}
	if err := waitHTTP(ctx, s.hydra, s.hydraAdminURL+"/health/ready"); err != nil {
		return err
	}
	return waitHTTP(ctx, s.hydra, s.hydraPublicURL+"/health/ready")
}

// hydraVersion is the first line of `hydra version`.
func hydraVersion(ctx context.Context, bin string) string {
	out, _ := exec.CommandContext(ctx, bin, "version").CombinedOutput()
	var parts []string
	for _, l := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && (strings.TrimSpace(k) == "Version" || strings.TrimSpace(k) == "Git Hash") {
			parts = append(parts, strings.TrimSpace(k)+" "+strings.TrimSpace(v))
		}
	}
	if len(parts) == 0 {
		return "version unknown"
	}
	return strings.Join(parts, ", ")
}

// hydraClients creates n client_credentials clients through Hydra's admin
// API (client_secret_basic, scope read), fetches one token for each from
// its token endpoint and checks that the admin introspection finds the
// first one active.
func (s *stack) hydraClients(ctx context.Context, n int) ([]client, error) {
	out := make([]client, n)
	var (
		wg       sync.WaitGroup
		next     = make(chan int)
		mu       sync.Mutex
		firstErr error
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	for range 8 {
		wg.Go(func() {
			for i := range next {
				// Hydra (DSN=memory) answers some concurrent creations 400
				// "Unable to serialize access due to a concurrent update in
				// another session", its store's serialization failure, which
				// is to be retried: on 2026-11-28 ten of the first 310
				// creations, one of them three times in a row, which ended
				// the run when three tries were all. Retry with a growing,
				// jittered pause before giving up.
				var err error
				for attempt := range hydraAttempts {
					if attempt > 0 {
						time.Sleep(retryPause(attempt))
					}
					if out[i], err = s.hydraClient(ctx, i); err == nil {
						break
					}
					s.logf("hydra client %d, attempt %d: %v", i, attempt+1, err)
				}
				if err != nil {
					fail(err)
				}
			}
		})
	}
	for i := range n {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	s.hydraFirst = out[0]
	st, b, err := s.hydraRequest(ctx, scHydraIntrospect)
	var v map[string]any
	if err != nil || st != http.StatusOK || json.Unmarshal(b, &v) != nil || v["active"] != true || v["client_id"] != out[0].ID {
		return nil, fmt.Errorf("probe hydra introspection: %d %s %v", st, b, err)
	}
	return out, nil
}

// hydraRequest sends Hydra one request of scenario sc's kind, for its first
// client: a token request, or the introspection of the client's token.
func (s *stack) hydraRequest(ctx context.Context, sc string) (int, []byte, error) {
	c := s.hydraFirst
	if sc == scHydraToken {
		return s.do(ctx, http.MethodPost, s.hydraPublicURL+"/oauth2/token", c.basic(), "grant_type=client_credentials&scope="+hydraScope)
	}
	return s.do(ctx, http.MethodPost, s.hydraAdminURL+"/admin/oauth2/introspect", "", "token="+c.Token+"&token_type_hint=access_token")
}

// hydraProbe says what Hydra answers, right after a run of scenario sc with
// errors, to one more request of the run's kind: at LOG_LEVEL=warn its log
// does not say which statuses it answered (on 2026-11-29 a run's every token
// request failed after an earlier run had gone well).
func (s *stack) hydraProbe(ctx context.Context, sc string) string {
	st, b, err := s.hydraRequest(ctx, sc)
	if err != nil {
		return "one more request after the run: " + err.Error()
	}
	b = bytes.TrimSpace(b)
	if len(b) > 300 {
		b = append(b[:300:300], "..."...)
	}
	return fmt.Sprintf("one more request after the run: %d `%s`", st, b)
}

// hydraAttempts bounds the tries of one Hydra client's creation.
const hydraAttempts = 10

// retryPause is the pause before the given retry (1, 2, ...): 50 ms
// doubled each time up to 1.6 s, and a random part as long, so that the
// writers that collided do not collide again.
func retryPause(attempt int) time.Duration {
	d := 50 * time.Millisecond << min(attempt-1, 5)
	return d + time.Duration(mathrand.Int64N(int64(d)))
}

// hydraClient creates the i-th Hydra client and fetches a token for it.
func (s *stack) hydraClient(ctx context.Context, i int) (client, error) {
	secret := make([]byte, 16)
	if _, err := rand.Read(secret); err != nil {
		return client{}, err
	}
	body, err := json.Marshal(map[string]any{
		"client_name":                fmt.Sprintf("bench-%d", i),
		"client_secret":              hex.EncodeToString(secret),
		"grant_types":                []string{"client_credentials"},
		"response_types":             []string{"token"},
		"token_endpoint_auth_method": "client_secret_basic",
		"scope":                      hydraScope,
	})
	if err != nil {
		return client{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.hydraAdminURL+"/admin/clients", bytes.NewReader(body))
	if err != nil {
		return client{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return client{}, fmt.Errorf("hydra POST /admin/clients: %w", err)
	}
	var created struct {
		ID string `json:"client_id"`
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &created) != nil || created.ID == "" {
		return client{}, fmt.Errorf("hydra POST /admin/clients: %d %s %v", resp.StatusCode, bytes.TrimSpace(b), err)
	}
	c := client{ID: created.ID, Secret: hex.EncodeToString(secret)}
	st, b, err := s.do(ctx, http.MethodPost, s.hydraPublicURL+"/oauth2/token", c.basic(), "grant_type=client_credentials&scope="+hydraScope)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err != nil || st != http.StatusOK || json.Unmarshal(b, &tok) != nil || tok.AccessToken == "" {
		return client{}, fmt.Errorf("hydra POST /oauth2/token: %d %s %v", st, b, err)
	}
	c.Token = tok.AccessToken
	return c, nil
}

// writeHydraData writes the wrk data of the Hydra scenarios: the token
// load's as for ours, the introspection's without an Authorization value
// (Hydra's admin introspection takes no client authentication).
func writeHydraData(dir string, load []client) (dataFiles, error) {
	if len(load) == 0 {
		return nil, errors.New("no Hydra clients")
	}
	files, err := writeData(dir, "hydra", load)
	if err != nil {
		return nil, err
	}
	var intro strings.Builder
	for _, c := range load {
		intro.WriteString("\t" + c.Token + "\n")
	}
	p := filepath.Join(dir, "introspect-hydra-anonymous.dat")
	if err := os.WriteFile(p, []byte(intro.String()), 0o600); err != nil {
		return nil, err
	}
	files[scIntrospect] = p
	return files, nil
}
