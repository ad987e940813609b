package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/dpop/dpoptest"
)

// TestProofFiles writes me-dpop's proof files for 3 clients and 2 threads
// and checks every line: two fields, a proof for its line's token (ath)
// whose jti is used once over every file; on every 50th line and each
// file's last, that pkg/dpop verifies it for GET uri with the token's key
// (jkt), issued now. The files together hold every line once, as many as
// dpopMargin (2) x rate x duration.
func TestProofFiles(t *testing.T) {
	t.Parallel()
	const verifyEvery = 50
	set := make([]boundClient, 3)
	for i := range set {
		set[i] = boundClient{ID: "c" + strconv.Itoa(i), Token: "token-" + strconv.Itoa(i), Key: dpoptest.NewKey()}
	}
	jkt := map[string]string{}
	for _, b := range set {
		jkt[b.Token] = b.Key.JKT()
	}
	const uri = "http://127.0.0.1:8081/api/v1/me/"
	start := time.Now()
	base, err := writeProofFiles(filepath.Join(t.TempDir(), "p.dat"), set, uri, 600, 2*time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base + ".2"); !os.IsNotExist(err) {
		t.Errorf("a third file for 2 threads: %v", err)
	}
	jtis := map[string]bool{}
	perClient := map[string]int{}
	total := 0
	for th := range 2 {
		b, err := os.ReadFile(base + "." + strconv.Itoa(th))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(lines) != 1200 {
			t.Errorf("thread %d: %d lines, want 1200", th, len(lines))
		}
		for i, l := range lines {
			total++
			token, proof, ok := strings.Cut(l, "\t")
			if !ok || strings.Contains(proof, "\t") || jkt[token] == "" {
				t.Fatalf("line %q", l)
			}
			perClient[token]++
			c := proofClaims(t, proof)
			if jtis[c.JTI] {
				t.Fatalf("jti %s twice", c.JTI)
			}
			jtis[c.JTI] = true
			if c.ATH != dpop.AccessTokenHash(token) {
				t.Errorf("ath %q, want %q", c.ATH, dpop.AccessTokenHash(token))
			}
			// Every line's claims are read above; the signature, key and
			// binding are verified on one line in verifyEvery (a signature
			// check under the race detector costs about 1.5 ms: 6,000
			// took 9.8 s of the quick suite) and always on each file's
			// first and last lines.
			if i%verifyEvery != 0 && i != len(lines)-1 {
				continue
			}
			p, err := dpop.Verify(dpop.Input{Headers: []string{proof}, Method: "GET", URI: uri, AccessToken: token, Now: time.Now()})
			if err != nil {
				t.Fatalf("proof of %s: %v", token, err)
			}
			if p.JKT != jkt[token] || dpop.CheckBinding(p, jkt[token]) != nil {
				t.Errorf("proof's key %s, token's %s", p.JKT, jkt[token])
			}
			if p.IssuedAt.Before(start.Truncate(time.Second)) || p.IssuedAt.After(time.Now()) {
				t.Errorf("iat %s, want the moment of writing (%s)", p.IssuedAt, start)
			}
			if p.JTI != c.JTI {
				t.Errorf("verified jti %s, claims read %s", p.JTI, c.JTI)
			}
		}
	}
	if total != 2400 || len(jtis) != 2400 {
		t.Errorf("%d lines, %d distinct jtis; want 2400 of each (2 x 600/s x 2 s)", total, len(jtis))
	}
	for _, b := range set {
		if perClient[b.Token] != 800 {
			t.Errorf("%s: %d lines, want 800 (rotation over the clients)", b.ID, perClient[b.Token])
		}
	}
}

// TestSplitLines deals lines to threads disjointly and completely.
func TestSplitLines(t *testing.T) {
	lines := []string{"a", "b", "c", "d", "e"}
	got := splitLines(lines, 2)
	if strings.Join(got[0], ",") != "a,c,e" || strings.Join(got[1], ",") != "b,d" {
		t.Errorf("splitLines: %q", got)
	}
	if got := splitLines(lines, 1); strings.Join(got[0], ",") != "a,b,c,d,e" {
		t.Errorf("one thread: %q", got)
	}
}

// TestProofFilesFloor writes at least 1,000 proofs per thread whatever the
// expected rate.
func TestProofFilesFloor(t *testing.T) {
	t.Parallel()
	set := []boundClient{{ID: "c", Token: "t", Key: dpoptest.NewKey()}}
	base, err := writeProofFiles(filepath.Join(t.TempDir(), "p.dat"), set, "http://h/api/v1/me/", 1, time.Second, 3)
	if err != nil {
		t.Fatal(err)
	}
	for th := range 3 {
		b, err := os.ReadFile(base + "." + strconv.Itoa(th))
		if err != nil || strings.Count(string(b), "\n") != 1000 {
			t.Errorf("thread %d: %d lines, %v; want 1000", th, strings.Count(string(b), "\n"), err)
		}
	}
}

// ath is the "ath" claim of a compact JWS.
// proofClaims reads a proof's jti and ath without verifying it.
func proofClaims(t *testing.T, proof string) (c struct {
	JTI string `json:"jti"`
	ATH string `json:"ath"`
}) {
	t.Helper()
	parts := strings.Split(proof, ".")
	if len(parts) != 3 {
		t.Fatalf("proof %q", proof)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || json.Unmarshal(b, &c) != nil || c.JTI == "" {
		t.Fatalf("proof claims %q: %v", b, err)
	}
	return c
}

// TestWrkCountsExhaustedProofs runs the real wrk with me-dpop's script on
// 2 threads, each with 5 proof lines, for a second against a server that
// answers 200: every send past a thread's 5 lines is a replay the harness
// caused, and BENCH_RESULT's exhausted counts them (measureWhole
// then repeats the run). The other scripts report 0.
func TestWrkCountsExhaustedProofs(t *testing.T) {
	requireTools(t)
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("DPoP") == "" || !strings.HasPrefix(r.Header.Get("Authorization"), "DPoP ") {
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	scripts, err := writeScripts(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "p.dat")
	for th := range 2 {
		var lines []string
		for i := range 5 {
			lines = append(lines, "token-"+strconv.Itoa(i)+"\tproof-"+strconv.Itoa(th)+"-"+strconv.Itoa(i))
		}
		if err := os.WriteFile(base+"."+strconv.Itoa(th), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := wrkRun{Script: scripts[loadMeDPoP], URL: srv.URL, Data: base, Path: "/api/v1/me/", Threads: 2, Connections: 2, Duration: time.Second}
	res, _, out, err := run.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// A thread counts its sends past its own 5 lines; a slow thread (the
	// race detector) may not reach its end. wrk counts a request when its
	// answer arrives: those in flight at the stop (one per connection)
	// were sent, not counted.
	if res.Status != 0 || res.Exhausted <= 0 || res.Exhausted > res.Requests-5+int64(run.Connections) {
		t.Errorf("requests %d, status %d, exhausted %d; want some, at most requests - 5 + %d:\n%s", res.Requests, res.Status, res.Exhausted, run.Connections, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "me.dat"), []byte("token-0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run.Script, run.Data = scripts[loadMe], filepath.Join(dir, "me.dat")
	if res, _, out, err := run.run(context.Background()); err != nil || res.Exhausted != 0 || res.Requests == 0 {
		t.Errorf("me: requests %d, exhausted %d, err %v:\n%s", res.Requests, res.Exhausted, err, out)
	}
}
