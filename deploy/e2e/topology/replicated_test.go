//go:build unix

package topology

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// TestReplicatedJourney runs the partner journey (create, token, /me,
// rotate, old token refused on the next request, revoke, the shared limit)
// with the real binaries on a Redis Cluster (3 primaries, 3 replicas) and
// on a Sentinel group, every operator change confirmed by a replica.
func TestReplicatedJourney(t *testing.T) {
	redistest.Long(t) // the quick suite's budget (deploy/docs/testing.md, "The long suites")
	t.Parallel()      // beside the other quick tests; the long ones run alone first
	requireCommand(t, "caddy")
	for _, rt := range redistest.Topologies(t) {
		t.Run(rt.Name(), func(t *testing.T) {
			top := startTopologyOn(t, 1, 1, rt.URL(), testPrefix(t, rt.URL()))
			journey(t, top)
			dpopJourney(t, top)
		})
	}
}

// testPrefix is a REDIS_KEY_PREFIX of the test's own on a shared Redis,
// its keys deleted when the test ends.
func testPrefix(t *testing.T, redisURL string) string {
	t.Helper()
	rdb, err := redisconn.Open(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return redistest.Prefix(t, rdb)
}

// clientKey is the Redis key of a client's record under prefix.
func clientKey(prefix, id string) string { return prefix + "{" + id + "}:client" }

// TestReplicaNotConfirmed cuts the link between the primary holding a
// client and its replica (the replica stopped, its connection killed, as in
// the lost-rotation report) and changes credentials as an operator would:
//
//   - `authserver clients rotate-secret` exits 3 within the confirmation
//     timeout, says how many replicas acknowledged and how many the primary
//     has, and prints the new secret, which is the one that works now (the
//     rotation took effect on the primary: the old secret is dead);
//   - `authserver clients create` exits 3 and prints the client with its
//     secret, which works; one client exists, not two;
//   - the admin API answers the same rotation 202 with the new secret and
//     the same warning, and a retry with its Idempotency-Key replays it
//     instead of rotating again.
//
// Once the replica is back, the same command exits 0. A long suite
// (LONG_TESTS=1).
func TestReplicaNotConfirmed(t *testing.T) {
	// Long: about 35 s of confirmation timeouts and replica resyncs on the
	// shared topologies, which no other test may use meanwhile.
	redistest.Long(t)
	requireCommand(t, "caddy")
	for _, rt := range redistest.Topologies(t) {
		t.Run(rt.Name(), func(t *testing.T) {
			top := startTopologyOn(t, 1, 1, rt.URL(), testPrefix(t, rt.URL()))
			_, admin := top.newOperator(t, false)
			c := top.createClient(t, "events.subscribe")
			oldToken := top.token(t, c, basicAuth)
			// The resource server has read the Cluster's layout and the
			// command table before the replica stops: a client that first
			// asks a stopped node waits out its budget (503), which is not
			// what this test is about.
			top.wantMe(t, top.edge, oldToken, c.ID)

			primary := rt.PrimaryFor(t, clientKey(top.prefix, c.ID))
			replicas := rt.ReplicasOf(t, primary)
			if len(replicas) == 0 {
				t.Fatalf("primary %s has no replica", primary.Addr())
			}
			cutReplicas(t, primary, replicas)

			start := time.Now()
			stdout, stderr, code := top.cliStatus(t, "clients", "rotate-secret", c.ID, "--json")
			took := time.Since(start)
			t.Logf("rotate-secret with the replica cut off: exit %d after %v: %s", code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
			if code != 3 {
				t.Errorf("exit status %d, want 3 (not confirmed by a replica)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if took > redisconn.DefaultConfirmTimeout+3*time.Second {
				t.Errorf("the command took %v, want about the confirmation timeout (%v)", took, redisconn.DefaultConfirmTimeout)
			}
			for _, want := range []string{"no replica confirmed the change", "confirmed by 0 of the 1 replica(s) required within 2s",
				"the primary has only 0 replica(s) connected", "the secret printed above is the one that works now", "do not run this command again"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q: %s", want, stderr)
				}
			}
			var rotated credentials
			if err := json.Unmarshal([]byte(stdout), &rotated); err != nil || rotated.ID != c.ID || rotated.Secret == "" {
				t.Fatalf("an unconfirmed rotation printed no secret: %q (%v)", stdout, err)
			}
			top.wantMeStatus(t, top.edge, oldToken, http.StatusUnauthorized)
			top.wantInvalidClient(t, c)
			top.wantMe(t, top.edge, top.token(t, rotated, basicAuth), c.ID)

			// The same through the admin API: 202, the secret in force, and
			// a retry with the key replays it.
			key := "c0ffee00-1234-4567-89ab-cdef01234567"
			a := admin.call("POST", "/admin/v1/clients/"+c.ID+"/rotate-secret", nil, "Idempotency-Key", key)
			warning, _ := a.object(t)["warning"].(string)
			apiSecret, _ := a.object(t)["client_secret"].(string)
			if a.status != 202 || apiSecret == "" || !strings.Contains(warning, "confirmed by 0 of the 1 replica(s) required") {
				t.Fatalf("admin API rotation with the replica cut off: %d %s", a.status, a.body)
			}
			if again := admin.call("POST", "/admin/v1/clients/"+c.ID+"/rotate-secret", nil, "Idempotency-Key", key); string(again.body) != string(a.body) {
				t.Fatalf("retry with the key: %d %s", again.status, again.body)
			}
			top.wantMe(t, top.edge, top.token(t, credentials{ID: c.ID, Secret: apiSecret}, basicAuth), c.ID)

			// A create (on Sentinel, where every key has the one primary cut
			// off): exit 3, the client printed with its secret, which works,
			// and one client made, not two.
			if rt.Name() == "sentinel" {
				stdout, stderr, code := top.cliStatus(t, "clients", "create", "--org", testOrg, "--name", "unconfirmed create", "--audience", "pharma", "--scopes", "", "--json")
				var made credentials
				if err := json.Unmarshal([]byte(stdout), &made); code != 3 || err != nil || made.Secret == "" || !strings.Contains(stderr, "do not run this command again") {
					t.Fatalf("unconfirmed create: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
				}
				top.wantMe(t, top.edge, top.token(t, made, basicAuth), made.ID)
				if n := strings.Count(string(top.cli(t, "clients", "list", "--org", testOrg, "--json")), `"unconfirmed create"`); n != 1 {
					t.Fatalf("%d clients named \"unconfirmed create\", want 1", n)
				}
			}

			resumeReplicas(t, rt, primary, replicas)
			again := top.cliCredentials(t, "clients", "rotate-secret", c.ID)
			if again.ID != c.ID {
				t.Fatalf("rotate-secret printed %+v", again)
			}
		})
	}
}

// cutReplicas stops the replicas of primary (SIGSTOP) and kills their
// connections on the primary, so nothing more reaches them.
func cutReplicas(t *testing.T, primary *redistest.Server, replicas []*redistest.Server) {
	t.Helper()
	for _, r := range replicas {
		r.Signal(syscall.SIGSTOP)
	}
	t.Cleanup(func() {
		for _, r := range replicas {
			r.Signal(syscall.SIGCONT)
		}
	})
	c := redis.NewClient(&redis.Options{Addr: primary.Addr()})
	defer c.Close()
	if err := c.Do(context.Background(), "client", "kill", "type", "replica").Err(); err != nil {
		t.Fatalf("CLIENT KILL TYPE replica on %s: %v", primary.Addr(), err)
	}
}

// resumeReplicas continues the replicas and waits until primary has them
// back, synced.
func resumeReplicas(t *testing.T, rt redistest.Topology, primary *redistest.Server, replicas []*redistest.Server) {
	t.Helper()
	for _, r := range replicas {
		r.Signal(syscall.SIGCONT)
	}
	testwait.Eventually(t, 30*time.Second, "the replicas of "+primary.Addr()+" come back", func() bool {
		return len(rt.ReplicasOf(t, primary)) >= len(replicas)
	})
}

// cliStatus runs the operator CLI and returns its output and exit status.
func (top *topology) cliStatus(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(top.bin, "authserver"), args...)
	cmd.Env = top.redisEnv()
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("authserver %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), code
}

// TestFailover kills (SIGKILL) the primary that holds a client while token,
// /me and introspection traffic for that client runs against both servers,
// on a Cluster and on a Sentinel group. It asserts that:
//
//   - every answer is 200, or 503 with Retry-After: never a 500, never a
//     transport error;
//   - no request sent after the kill was answered 200 before the replica's
//     promotion (the client's state could not be read then);
//   - the servers recover, without a restart, within 2 s of the promotion:
//     every request sent from then on is answered 200;
//   - /readyz says 503 while the primary is gone and 200 after;
//   - a rotation confirmed by the replica before the kill survives it: the
//     old secret and the tokens issued under it stay dead, the new secret
//     works.
//
// It prints each kind's error count and the recovery time.
func TestFailover(t *testing.T) {
	redistest.Long(t)
	requireCommand(t, "caddy")
	for _, start := range []func(testing.TB) redistest.Topology{
		func(t testing.TB) redistest.Topology { return redistest.StartCluster(t) },
		func(t testing.TB) redistest.Topology { return redistest.StartSentinel(t) },
	} {
		rt := start(t)
		t.Run(rt.Name(), func(t *testing.T) { failover(t, rt) })
	}
}

// failoverLoad is the traffic of TestFailover.
type failoverLoad struct {
	mu      sync.Mutex
	records []failoverRecord
}

type failoverRecord struct {
	kind       string // token, me, introspect, readyz-auth, readyz-resource
	sent, done time.Time
	status     int // 0: transport error
	retryAfter string
	err        string
}

func (l *failoverLoad) add(r failoverRecord) {
	l.mu.Lock()
	l.records = append(l.records, r)
	l.mu.Unlock()
}

// okSince reports whether kinds kinds of request have each had a 200 for
// a request sent after since.
func (l *failoverLoad) okSince(since time.Time, kinds int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := map[string]bool{}
	for _, r := range l.records {
		if r.status == http.StatusOK && r.sent.After(since) {
			ok[r.kind] = true
		}
	}
	return len(ok) >= kinds
}

func failover(t *testing.T, rt redistest.Topology) {
	top := startTopologyOn(t, 1, 1, rt.URL(), testPrefix(t, rt.URL()))
	old := top.createClient(t, "events.subscribe")
	for _, args := range [][]string{{old.ID, "1000000"}, {old.ID, "1000000", "--token"}} {
		top.cli(t, append([]string{"clients", "set-rate-limit"}, args...)...)
	}
	oldToken := top.token(t, old, basicAuth)
	// The rotation before the crash: confirmed by the replica, so the crash
	// cannot undo it.
	c := top.cliCredentials(t, "clients", "rotate-secret", old.ID)
	tok := top.token(t, c, basicAuth)

	auth, resource := top.auth[0].base, top.resource[0].base
	primary := rt.PrimaryFor(t, clientKey(top.prefix, c.ID))
	replicas := rt.ReplicasOf(t, primary)

	load := &failoverLoad{}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	send := func(kind string, req *http.Request) {
		r := failoverRecord{kind: kind, sent: time.Now()}
		resp, err := hc.Do(req)
		if err != nil {
			r.err = err.Error()
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			r.status, r.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
		}
		r.done = time.Now()
		load.add(r)
	}
	requests := map[string]func() *http.Request{
		"token": func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, auth+"/api/v1/oauth/token/", strings.NewReader("grant_type=client_credentials"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
			return req
		},
		"me": func() *http.Request {
			req, _ := http.NewRequest(http.MethodGet, resource+"/api/v1/me/", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			return req
		},
		"introspect": func() *http.Request {
			req, _ := http.NewRequest(http.MethodPost, auth+"/api/v1/oauth/introspect/", strings.NewReader(url.Values{"token": {tok}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
			return req
		},
		"readyz-auth":     func() *http.Request { req, _ := http.NewRequest(http.MethodGet, auth+"/readyz", nil); return req },
		"readyz-resource": func() *http.Request { req, _ := http.NewRequest(http.MethodGet, resource+"/readyz", nil); return req },
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for kind, newReq := range requests {
		workers, pause := 2, 5*time.Millisecond
		if strings.HasPrefix(kind, "readyz") {
			workers, pause = 1, 100*time.Millisecond
		}
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(pause)
				defer tick.Stop()
				for {
					send(kind, newReq())
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
		}
	}

	// Every kind answered before the kill, so each has a baseline.
	testwait.Eventually(t, 30*time.Second, "every kind of request answered 200 before the kill", func() bool {
		return load.okSince(time.Time{}, len(requests))
	})
	killed := time.Now()
	primary.Kill()
	promoted, seen := rt.WaitPromoted(t, replicas, 60*time.Second)
	// The promotion happened at or before seen; WaitPromoted polls every
	// 50 ms and asks each node, so it had not yet happened a little earlier.
	notYet := seen.Add(-300 * time.Millisecond)
	const recoverWithin = 2 * time.Second
	// The load runs on until every kind has been answered 200 for a request
	// sent after the recovery window, so any failure inside it is seen.
	testwait.Eventually(t, 60*time.Second, "every kind answered 200 after the recovery window", func() bool {
		return load.okSince(seen.Add(recoverWithin+time.Second), len(requests))
	})
	close(stop)
	wg.Wait()
	t.Logf("%s: killed primary %s; replica %s promoted %v after the kill", rt.Name(), primary.Addr(), promoted.Addr(), seen.Sub(killed).Round(time.Millisecond))

	byKind := map[string][]failoverRecord{}
	for _, r := range load.records {
		byKind[r.kind] = append(byKind[r.kind], r)
	}
	kinds := slices.Sorted(func(yield func(string) bool) {
		for k := range byKind {
			if !yield(k) {
				return
			}
		}
	})
	for _, kind := range kinds {
		recs := byKind[kind]
		counts := map[string]int{}
		var lastFailure time.Time
		for _, r := range recs {
			label := strconv.Itoa(r.status)
			if r.status == 0 {
				label = "transport error"
			}
			counts[label]++
			if r.status != http.StatusOK && r.sent.After(lastFailure) {
				lastFailure = r.sent
			}
			switch {
			case r.status == 0:
				t.Errorf("%s: transport error: %s", kind, r.err)
			case r.status == http.StatusServiceUnavailable && r.retryAfter == "":
				t.Errorf("%s: 503 without Retry-After", kind)
			case r.status != http.StatusOK && r.status != http.StatusServiceUnavailable:
				t.Errorf("%s: answered %d", kind, r.status)
			}
			isReady := strings.HasPrefix(kind, "readyz")
			if !isReady && r.status == http.StatusOK && r.sent.After(killed) && r.done.Before(notYet) {
				t.Errorf("%s: sent %v after the kill and answered 200 %v before the promotion: the client's state cannot have been read",
					kind, r.sent.Sub(killed).Round(time.Millisecond), notYet.Sub(r.done).Round(time.Millisecond))
			}
			if r.sent.After(seen.Add(recoverWithin)) && r.status != http.StatusOK {
				t.Errorf("%s: sent %v after the promotion, answered %d: not recovered within %v",
					kind, r.sent.Sub(seen).Round(time.Millisecond), r.status, recoverWithin)
			}
		}
		recovery := "no failure"
		if !lastFailure.IsZero() {
			recovery = fmt.Sprintf("last failure sent %v after the promotion", lastFailure.Sub(seen).Round(time.Millisecond))
		}
		t.Logf("%s %-15s %5d requests %v; %s", rt.Name(), kind, len(recs), counts, recovery)
		if strings.HasPrefix(kind, "readyz") && counts["503"] == 0 {
			t.Errorf("%s never said 503 while the primary was gone", kind)
		}
	}

	// The confirmed rotation survived: the old secret and its token stay
	// dead, the new secret works.
	top.wantInvalidClient(t, old)
	top.wantMeStatus(t, top.edge, oldToken, http.StatusUnauthorized)
	if active := top.introspectAt(t, top.edge, c, oldToken); active {
		t.Errorf("the token of the rotated-away secret is active after the failover")
	}
	fresh := top.token(t, c, basicAuth)
	top.wantMe(t, top.edge, fresh, c.ID)
}
