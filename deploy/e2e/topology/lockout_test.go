//go:build unix

package topology

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestNoNeighbourLockout runs, with the real binaries behind the edge, the
// shared-address case of the abuse report: behind one address (a
// hospital's NAT), a stale integration keeps sending a rotated secret
// (here at 20 requests a second, ten times the report's rate, to compress
// the time) while a neighbour's integration asks for tokens every 500 ms:
// every one of the neighbour's requests gets a token. Then a burst of 500
// concurrent wrong-secret requests for one client from a fresh address:
// exactly the failure budget (60) is checked, the rest refused unchecked.
// It prints the figures.
func TestNoNeighbourLockout(t *testing.T) {
	redistest.Long(t)
	requireCommand(t, "caddy")
	top := startTopology(t, 2, 1)
	stale := top.createClient(t, "events.subscribe")
	top.cliCredentials(t, "clients", "rotate-secret", stale.ID) // stale now holds the old secret
	neighbour := top.createClient(t, "events.subscribe")
	top.cli(t, "clients", "set-rate-limit", neighbour.ID, "1000", "--token")

	const length = 10 * time.Second
	var (
		staleCounts = map[int]int{}
		mu          sync.Mutex
		neighbourOK atomic.Int64
		neighbourN  atomic.Int64
		wg          sync.WaitGroup
	)
	stop := time.Now().Add(length)
	wg.Go(func() {
		for time.Now().Before(stop) {
			a := top.tokenRequest(t, stale, basicAuth, nil)
			mu.Lock()
			staleCounts[a.status]++
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	})
	wg.Go(func() {
		for time.Now().Before(stop) {
			a := top.tokenRequest(t, neighbour, basicAuth, nil)
			neighbourN.Add(1)
			if a.status == http.StatusOK {
				neighbourOK.Add(1)
			} else {
				t.Errorf("neighbour's token request: %d %s", a.status, a.body)
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
	wg.Wait()
	t.Logf("behind one address for %v: stale integration %v (status: count); neighbour %d of %d token requests answered 200",
		length, staleCounts, neighbourOK.Load(), neighbourN.Load())
	if staleCounts[http.StatusUnauthorized] != 60 || staleCounts[http.StatusTooManyRequests] == 0 {
		t.Errorf("stale integration: %v, want exactly 60 x 401 then 429s", staleCounts)
	}
	if neighbourOK.Load() != neighbourN.Load() || neighbourN.Load() < 15 {
		t.Errorf("neighbour: %d of %d succeeded, want all", neighbourOK.Load(), neighbourN.Load())
	}

	// A burst of 500 concurrent wrong-secret requests from a fresh address.
	victim := top.createClient(t, "events.subscribe")
	burst := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}).DialContext,
		MaxIdleConnsPerHost: 64,
	}}
	bursty := &topology{edge: top.edge, partner: burst}
	var unauthorized, slowed, other atomic.Int64
	var bw sync.WaitGroup
	jobs := make(chan struct{}, 500)
	for range 500 {
		jobs <- struct{}{}
	}
	close(jobs)
	// A wrong secret of the right form (its checksum holds), so that it is
	// checked against the client's failure budget rather than refused as
	// malformed before any lookup.
	wrong := clients.NewSecret()
	start := time.Now()
	for range 64 {
		bw.Go(func() {
			for range jobs {
				a := bursty.tokenRequest(t, credentials{ID: victim.ID, Secret: wrong}, basicAuth, nil)
				switch a.status {
				case http.StatusUnauthorized:
					unauthorized.Add(1)
				case http.StatusTooManyRequests:
					slowed.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	bw.Wait()
	t.Logf("burst of %d wrong-secret requests from a fresh address in %v: %d checked (401), %d refused unchecked (429), %d other",
		unauthorized.Load()+slowed.Load()+other.Load(), time.Since(start).Round(time.Millisecond), unauthorized.Load(), slowed.Load(), other.Load())
	if unauthorized.Load() != 60 || other.Load() != 0 {
		t.Errorf("burst: %d checked, %d other; want exactly 60 checked", unauthorized.Load(), other.Load())
	}
	// The victim itself still gets tokens from its own address.
	top.token(t, victim, basicAuth)
}
