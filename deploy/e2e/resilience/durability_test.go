package resilience

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// durabilityCycles is how many rotate, revoke and crash cycles
// TestDurability runs.
const durabilityCycles = 20

// TestDurability crashes Redis, configured as docker-compose.yml configures
// it (appendonly yes, appendfsync always), the moment a secret rotation and
// a revocation have returned, and restarts it from its files (issue point
// 2). Each cycle rotates client A's secret again and revokes a new client B;
// after every restart the old secret of A and B are refused
// (invalid_client), their tokens from before the commands are refused (401),
// the new secret of A works, and the audit streams hold both events.
func TestDurability(t *testing.T) {
	t.Parallel() // after TestRedisOutage, which counts the process's goroutines alone
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	s := startStack(t, srv.URL())
	ctx := t.Context()
	a := s.createClient(t, "durability client A")

	var restart, ready []time.Duration
	for cycle := 1; cycle <= durabilityCycles; cycle++ {
		b := s.createClient(t, fmt.Sprintf("durability client B%d", cycle))
		tokA, tokB := s.mustToken(t, a), s.mustToken(t, b)
		old := a

		// The operator's commands; Redis is killed the moment they return.
		rotated, secret, err := s.operator.RotateSecret(ctx, a.ID)
		if err != nil {
			t.Fatalf("cycle %d: rotate: %v", cycle, err)
		}
		if _, err := s.operator.Revoke(ctx, b.ID); err != nil {
			t.Fatalf("cycle %d: revoke: %v", cycle, err)
		}
		srv.Kill()
		a.Secret = secret

		start := time.Now()
		srv.Start() // the same port and directory: the AOF files
		restart = append(restart, time.Since(start))
		ready = append(ready, s.waitReady(t, 10*time.Second))

		for _, c := range []struct {
			what string
			r    result
		}{
			{"A's old secret", s.token(old)},
			{"revoked B", s.token(b)},
			{"A's token from before the rotation", s.me(tokA)},
			{"B's token from before the revocation", s.me(tokB)},
		} {
			if p := refusalProblem(c.r); p != "" {
				t.Errorf("cycle %d, after the crash: %s: %s", cycle, c.what, p)
			}
		}
		if r := s.me(s.mustToken(t, a)); !describes(r, a.ID) {
			t.Errorf("cycle %d, after the crash: A's new secret: /me %v", cycle, r)
		}

		gotA, err := s.operator.GetClient(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if gotA.Generation != rotated.Generation || gotA.Generation != int64(cycle+1) {
			t.Errorf("cycle %d: A's generation after the crash is %d, want %d", cycle, gotA.Generation, cycle+1)
		}
		if gotB, err := s.operator.GetClient(ctx, b.ID); err != nil || gotB.Status != clients.StatusRevoked {
			t.Errorf("cycle %d: B after the crash: %+v, %v", cycle, gotB, err)
		}
		if n := events(t, s, a.ID, "client.rotate"); n != cycle {
			t.Errorf("cycle %d: A's audit stream holds %d client.rotate events, want %d", cycle, n, cycle)
		}
		if n := events(t, s, b.ID, "client.revoke"); n != 1 {
			t.Errorf("cycle %d: B's audit stream holds %d client.revoke events, want 1", cycle, n)
		}
		if t.Failed() {
			break
		}
	}

	all := s.answers()
	t.Logf("cycles: %d rotate + revoke + SIGKILL + restart; requests: %d; answers: %s",
		durabilityCycles, len(all), formatTally(tally(all)))
	t.Logf("redis-server restart to PING: %s", spread(restart))
	t.Logf("restart to both servers ready: %s", spread(ready))
	for _, r := range all {
		if r.status != http.StatusOK && r.status != http.StatusUnauthorized {
			t.Errorf("unexpected answer: %v", r)
		}
	}
}

// events counts the entries of a client's audit stream with the event name.
func events(t *testing.T, s *stack, id, event string) int {
	t.Helper()
	entries, err := s.operator.ClientAudit(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Event == event {
			n++
		}
	}
	return n
}

// spread summarises durations: min, median, max.
func spread(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	r := func(x time.Duration) time.Duration { return x.Round(time.Millisecond) }
	return fmt.Sprintf("min %v, median %v, max %v (n=%d)", r(s[0]), r(s[len(s)/2]), r(s[len(s)-1]), len(s))
}
