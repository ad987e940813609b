package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestLocalStackFollowsItsOwnInstructions starts the one-command stack,
// runs the curl commands it prints, exactly as printed, and expects a 200
// from /api/v1/me/ describing the sandbox client.
func TestLocalStackFollowsItsOwnInstructions(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	env := map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": prefix}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"local", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after Ctrl-C, want nil", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("local stack did not stop within 15 s of cancellation")
		}
	})

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
	text := out.String()
	if !strings.Contains(text, "sandbox-simulation") || !strings.Contains(text, "demo data only") {
		t.Fatalf("welcome text does not name the sandbox organisation:\n%s", text)
	}
	lines := strings.Split(text, "\n")
	var script []string
	for i, l := range lines {
		if strings.HasPrefix(l, "Or both at once:") {
			script = []string{strings.TrimSpace(lines[i+1]), strings.TrimSpace(lines[i+2])}
		}
	}
	if len(script) != 2 {
		t.Fatalf("no copy-paste commands in:\n%s", text)
	}
	cmd := exec.Command("bash", "-c", "set -e\n"+script[0]+"\n"+strings.Replace(script[1], "curl -s ", "curl -s -w '\\n%{http_code}' ", 1))
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("printed commands failed: %v\n%s", err, got)
	}
	body, status, _ := strings.Cut(strings.TrimSpace(string(got)), "\n")
	if status != "200" {
		t.Fatalf("GET /api/v1/me/ with the printed commands: status %s, body %s", status, body)
	}
	var me map[string]any
	if err := json.Unmarshal([]byte(body), &me); err != nil {
		t.Fatalf("/me body is not JSON: %v: %s", err, body)
	}
	if me["environment"] != "sandbox" || me["api_version"] != "1" || me["audience"] != "hospital" {
		t.Errorf("/me = %v, want a sandbox hospital client of api_version 1", me)
	}
	org, _ := me["organization"].(map[string]any)
	if org["slug"] != "sandbox-simulation" {
		t.Errorf("organization = %v, want the simulation organisation", org)
	}
	if id := regexp.MustCompile(`client_id=(svc_\w+)`).FindStringSubmatch(text); id == nil || me["client_id"] != id[1] {
		t.Errorf("/me client_id = %v, want the first printed client %v", me["client_id"], id)
	}
}

// TestLocalStackRefusesEmbeddedRedisInCI: under CI=true a missing REDIS_URL
// is an error, never a silent in-process fallback.
func TestLocalStackRefusesEmbeddedRedisInCI(t *testing.T) {
	env := map[string]string{"CI": "true"}
	err := run(context.Background(), []string{"local", "--addr", "127.0.0.1:0"}, func(k string) string { return env[k] }, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "REDIS_URL") {
		t.Fatalf("run = %v, want an error naming REDIS_URL", err)
	}
}
