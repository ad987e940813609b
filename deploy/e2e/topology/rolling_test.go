//go:build unix

package topology

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// drainBound is how long a replica may take to exit after SIGTERM: its
// in-flight requests get httpserver.ShutdownTimeout (10 s), its metrics
// listener as long again, well within the chart's grace periods
// (deploy/docs/kubernetes.md, "Probes and shutdown").
const drainBound = 25 * time.Second

// TestRollingRestart is an upgrade as an operator runs one behind the edge
// (deploy/docs/scaling.md, "Upgrades"): two replicas of each server, every
// one replaced in turn (SIGTERM, then a new process on its port, ready and
// routed to before the next is stopped) while partners keep getting tokens
// and calling /api/v1/me/ through the edge. No request may fail, and the
// tokens issued before the restart still answer after it.
func TestRollingRestart(t *testing.T) {
	redistest.Long(t)
	requireCommand(t, "redis-server")
	// The pinned Caddy (the compose edge's version), which the topology's
	// edge runs where it is built: Debian's 2.6 neither retries a POST
	// that found no upstream up (both token replicas briefly out of
	// rotation on a loaded machine: the survivor's health check timing
	// out while the other drains) nor sends a retried body
	// (caddyserver/caddy#7546).
	e2etest.Caddy(t)
	top := startTopology(t, 2, 2)
	c := top.createClient(t, "events.subscribe")
	top.cli(t, "clients", "set-rate-limit", c.ID, "1000000")
	top.cli(t, "clients", "set-rate-limit", c.ID, "1000000", "--token")
	before := top.token(t, c, basicAuth)

	load := newRollingLoad(top, c)
	load.start(4)
	load.waitOK(t, "the load is answered before the restart")
	for _, pool := range [][]*server{top.auth, top.resource} {
		for i := range pool {
			top.replace(t, pool, i)
			load.waitOK(t, "the load is answered after replacing "+pool[i].Name)
		}
	}
	ok, failed := load.stop()
	t.Logf("rolling restart of 2+2 replicas: %d token and /me requests answered, %d failed", ok, len(failed))
	for i, f := range failed {
		if i == 10 {
			t.Errorf("... and %d more", len(failed)-10)
			break
		}
		t.Errorf("failed during the restart: %s", f)
	}
	if len(failed) > 0 {
		// The edge's own account of the first failures: its errors and
		// the answers it gave that were not 200.
		n := 0
		for _, l := range strings.Split(top.edgeProc.Out.String(), "\n") {
			if strings.Contains(l, `"level":"error"`) || strings.Contains(l, `"level":"warn"`) ||
				(strings.Contains(l, `"status":`) && !strings.Contains(l, `"status":200`)) {
				t.Logf("edge: %.700s", l)
				if n++; n == 15 {
					break
				}
			}
		}
	}
	top.wantMe(t, top.edge, before, c.ID)
}

// replace stops pool[i] with SIGTERM, starts a new process with the same
// command on its port, and waits until the edge routes to it.
func (top *topology) replace(t *testing.T, pool []*server, i int) {
	t.Helper()
	old := pool[i]
	old.Stop(t, drainBound)
	s := top.startServerOn(t, old.port, old.Name+"'", old.env, old.bin, old.args...)
	waitOK(t, s.base+"/readyz", s.process)
	pool[i] = s
	path := "/.well-known/jwks.json"
	if old.bin == "resourceserver" {
		path = "/readyz"
	}
	waitRoutes(t, top.edge+path, pool)
}

// rollingLoad is TestRollingRestart's traffic: each worker gets a token
// through the edge and calls /api/v1/me/ with it, again and again.
type rollingLoad struct {
	top *topology
	c   credentials

	stopped chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	ok     int
	failed []string
	okGen  int // ok answers counted since the last waitOK
}

func newRollingLoad(top *topology, c credentials) *rollingLoad {
	return &rollingLoad{top: top, c: c, stopped: make(chan struct{})}
}

func (l *rollingLoad) start(workers int) {
	for range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stopped:
					return
				default:
				}
				l.record(l.round())
			}
		}()
	}
}

// round is one token request and one /me call; it returns what failed,
// or "".
func (l *rollingLoad) round() string {
	form := url.Values{"grant_type": {"client_credentials"}}.Encode()
	req, _ := http.NewRequest(http.MethodPost, l.top.edge+"/api/v1/oauth/token/", strings.NewReader(form))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(l.c.ID), url.QueryEscape(l.c.Secret))
	status, body, err := send(l.top.partner, req)
	if err != nil || status != http.StatusOK {
		return fmt.Sprintf("token: %d %s %v", status, body, err)
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.Unmarshal(body, &tok); err != nil || tok.AccessToken == "" {
		return fmt.Sprintf("token: %s", body)
	}
	req, _ = http.NewRequest(http.MethodGet, l.top.edge+"/api/v1/me/", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	status, body, err = send(l.top.partner, req)
	if err != nil || status != http.StatusOK {
		return fmt.Sprintf("me: %d %s %v", status, body, err)
	}
	return ""
}

func send(hc *http.Client, req *http.Request) (int, []byte, error) {
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func (l *rollingLoad) record(failure string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if failure != "" {
		l.failed = append(l.failed, time.Now().Format("15:04:05.000")+" "+failure)
		return
	}
	l.ok++
	l.okGen++
}

// waitOK waits until the load has had 20 more successful rounds.
func (l *rollingLoad) waitOK(t *testing.T, what string) {
	t.Helper()
	l.mu.Lock()
	l.okGen = 0
	l.mu.Unlock()
	testwait.Eventually(t, 30*time.Second, what, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.okGen >= 20
	})
}

// stop ends the load and returns its successful rounds and its failures.
func (l *rollingLoad) stop() (int, []string) {
	close(l.stopped)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok, l.failed
}
