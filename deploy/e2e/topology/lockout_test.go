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
// shared-address cases of the abuse report and of issue 21: behind one
// address (a hospital's NAT), a stale instance keeps sending its client's
// rotated-out secret (here at 20 requests a second, ten times the report's
// rate, to compress the time) while a sibling instance of the SAME client,
// holding the new secret, and a neighbour's integration each ask for a
// token every 500 ms: every one of the sibling's and the neighbour's
// requests gets a token (before issue 21, the stale instance spent the
// address's failure budget for its client in 3 s and the sibling got 429
// from then on). The stale secret is checked once and then answered 401
// unchecked. Then a burst of 500 concurrent guesses (distinct wrong
// secrets) for one client from a fresh address: exactly the failure budget
// (60) is checked, the rest refused unchecked. It prints the figures.
func TestNoNeighbourLockout(t *testing.T) {
	redistest.Long(t)
	requireCommand(t, "caddy")
	top := startTopology(t, 2, 1)
	stale := top.createClient(t, "events.subscribe")
	sibling := top.cliCredentials(t, "clients", "rotate-secret", stale.ID) // stale now holds the old secret
	neighbour := top.createClient(t, "events.subscribe")
	top.cli(t, "clients", "set-rate-limit", neighbour.ID, "1000", "--token")

	const length = 10 * time.Second
	var (
		staleCounts = map[int]int{}
		mu          sync.Mutex
		wg          sync.WaitGroup
	)
	// Paced by tickers: the scenario is a rate (20 a second, one each 500
	// ms) over a span of time, not a condition.
	stop := time.Now().Add(length)
	every := func(d time.Duration, do func()) {
		tick := time.NewTicker(d)
		defer tick.Stop()
		for time.Now().Before(stop) {
			do()
			<-tick.C
		}
	}
	wg.Go(func() {
		every(50*time.Millisecond, func() {
			a := top.tokenRequest(t, stale, basicAuth, nil)
			mu.Lock()
			staleCounts[a.status]++
			mu.Unlock()
		})
	})
	every500ms := func(c credentials, ok, n *atomic.Int64, who string) {
		every(500*time.Millisecond, func() {
			a := top.tokenRequest(t, c, basicAuth, nil)
			n.Add(1)
			if a.status == http.StatusOK {
				ok.Add(1)
			} else {
				t.Errorf("%s's token request: %d %s", who, a.status, a.body)
			}
		})
	}
	var siblingOK, siblingN, neighbourOK, neighbourN atomic.Int64
	wg.Go(func() { every500ms(sibling, &siblingOK, &siblingN, "sibling") })
	wg.Go(func() { every500ms(neighbour, &neighbourOK, &neighbourN, "neighbour") })
	wg.Wait()
	t.Logf("behind one address for %v: stale instance %v (status: count); its sibling with the right secret %d of %d token requests answered 200; neighbour %d of %d",
		length, staleCounts, siblingOK.Load(), siblingN.Load(), neighbourOK.Load(), neighbourN.Load())
	// The stale secret: 401, checked once, then repeats (fewer than the
	// 300 a minute tokenserver.DefaultRepeatedFailuresPerMinute allows).
	if staleCounts[http.StatusUnauthorized] == 0 || len(staleCounts) != 1 {
		t.Errorf("stale instance: %v, want every one 401", staleCounts)
	}
	if siblingOK.Load() != siblingN.Load() || siblingN.Load() < 15 {
		t.Errorf("sibling: %d of %d succeeded, want all", siblingOK.Load(), siblingN.Load())
	}
	if neighbourOK.Load() != neighbourN.Load() || neighbourN.Load() < 15 {
		t.Errorf("neighbour: %d of %d succeeded, want all", neighbourOK.Load(), neighbourN.Load())
	}

	// A burst of 500 concurrent guesses from a fresh address.
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
	// Distinct wrong secrets of the right form (their checksums hold), so
	// that each is a new guess checked against the client's failure budget
	// rather than refused as malformed before any lookup, or answered as a
	// repeat of a secret already refused.
	start := time.Now()
	for range 64 {
		bw.Go(func() {
			for range jobs {
				a := bursty.tokenRequest(t, credentials{ID: victim.ID, Secret: clients.NewSecret()}, basicAuth, nil)
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
