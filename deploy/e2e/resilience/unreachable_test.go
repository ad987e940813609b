//go:build linux

package resilience

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// failFast bounds how long a request may wait for a Redis that does not
// answer at all: pkg/redisconn allows two tries of one one-second dial each
// (plus go-redis's short retry backoff); the rest is scheduling slack on a
// shared machine. Before redisconn limited the dial attempts, go-redis made
// five per try and such a request took about 11 s.
const failFast = 3500 * time.Millisecond

// TestRedisUnreachable points both servers at a Redis host that drops
// packets, as across a network partition, where a killed Redis would refuse
// connections at once: every dial hangs until its timeout. Both servers must
// still answer their documented 503 quickly, never hold a request for long:
// the quick suite checks the documented 503 and that no request hung, the
// long suites how soon (failFast).
func TestRedisUnreachable(t *testing.T) {
	t.Parallel() // after TestRedisOutage, which counts the process's goroutines alone
	addr := blackhole(t)
	s := startStack(t, "redis://"+addr+"/0")
	iss, err := accesstoken.NewIssuer(s.keys, issuer, audience)
	if err != nil {
		t.Fatal(err)
	}
	id := clients.NewClientID()
	tok, _, err := iss.Issue(accesstoken.Grant{ClientID: id, Generation: 1, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}

	// A few at once, as partners would send them; fewer than go-redis's
	// pool size, whose failed dials would otherwise trip its breaker and
	// make the later ones fail at once.
	const each = 3
	var wg sync.WaitGroup
	results := make([]result, 2*each)
	for i := range each {
		wg.Go(func() { results[2*i] = s.token(credentials{ID: id, Secret: clients.NewSecret()}) })
		wg.Go(func() { results[2*i+1] = s.me(tok) })
	}
	wg.Wait()
	var slowest time.Duration
	for _, r := range results {
		if p := unavailableProblem(r); p != "" {
			t.Errorf("%v: %s", r, p)
		}
		took := r.recv.Sub(r.sent)
		slowest = max(slowest, took)
		redistest.AtMost(t, r.String(), took, failFast)
	}
	start := time.Now()
	for _, url := range []string{s.auth.URL + "/readyz", s.api.URL + "/readyz"} {
		if got := s.get(url); got != http.StatusServiceUnavailable {
			t.Errorf("GET %s: %d, want 503", url, got)
		}
	}
	t.Logf("answers: %s; slowest %v (bound %v); both /readyz answered 503 in %v",
		formatTally(tally(results)), slowest.Round(time.Millisecond), failFast, time.Since(start).Round(time.Millisecond))
}

// blackhole returns a loopback address whose connections hang: a socket
// listening with a backlog of 0 whose accept queue is filled by one
// connection that is never accepted, after which Linux drops further SYNs
// instead of refusing them.
func blackhole(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	for range 8 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return addr // the queue is full: dials hang
		}
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Fatalf("dials to %s never hung: cannot simulate an unreachable Redis", addr)
	return ""
}
