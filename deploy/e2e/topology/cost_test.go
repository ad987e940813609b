//go:build unix

package topology

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestUnauthenticatedCost runs, on the real token service binary, the two
// costly-request cases of the abuse report and prints the figures:
//
//   - a flood of 64 KiB form bodies of 8,328 fields from one address while a
//     neighbour on another address asks for tokens: every flood request is
//     refused (400 invalid_request past 16 parameters, then 429 once the
//     address's ceiling is spent) and every one of the neighbour's requests
//     gets a token; the neighbour's throughput and latency are printed;
//   - more idle keep-alive connections than the server's --max-conns: a
//     fresh client's /healthz is still answered;
//   - a request with both Content-Length and Transfer-Encoding is answered
//     and its connection closed (RFC 9112 section 6.1).
func TestUnauthenticatedCost(t *testing.T) {
	redistest.Long(t)
	requireCommand(t, "caddy")
	top := startTopology(t, 1, 1)
	auth := top.auth[0].base
	neighbour := top.createClient(t, "events.subscribe")
	top.cli(t, "clients", "set-rate-limit", neighbour.ID, "1000000", "--token")

	fields := make([]string, 8328)
	for i := range fields {
		fields[i] = "p" + strconv.Itoa(i) + "="
	}
	body := strings.Join(fields, "&")
	from := func(ip byte) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			DialContext:         (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, ip)}}).DialContext,
			MaxIdleConnsPerHost: 16,
		}}
	}
	flooder, partner := from(4), from(5)

	const length = 8 * time.Second
	stop := time.Now().Add(length)
	var (
		flood          sync.Map // status -> *atomic.Int64
		floodTransport atomic.Int64
		wg             sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				resp, err := flooder.Post(auth+"/api/v1/oauth/token/", "application/x-www-form-urlencoded", strings.NewReader(body))
				if err != nil {
					floodTransport.Add(1)
					continue
				}
				resp.Body.Close()
				n, _ := flood.LoadOrStore(resp.StatusCode, &atomic.Int64{})
				n.(*atomic.Int64).Add(1)
			}
		})
	}
	var latencies []time.Duration
	failed := 0
	firstFailure := "" // what the first failed request got, for the report
	wg.Go(func() {
		for time.Now().Before(stop) {
			req, _ := http.NewRequest(http.MethodPost, auth+"/api/v1/oauth/token/", strings.NewReader("grant_type=client_credentials"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(neighbour.ID, neighbour.Secret)
			start := time.Now()
			resp, err := partner.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				failed++
				if err == nil {
					if failed == 1 {
						b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
						firstFailure = fmt.Sprintf("%d after %v, Retry-After %q: %s", resp.StatusCode, time.Since(start).Round(time.Millisecond), resp.Header.Get("Retry-After"), b)
					}
					resp.Body.Close()
				} else if failed == 1 {
					firstFailure = fmt.Sprintf("after %v: %v", time.Since(start).Round(time.Millisecond), err)
				}
				continue
			}
			resp.Body.Close()
			latencies = append(latencies, time.Since(start))
		}
	})
	wg.Wait()
	counts := map[int]int64{}
	flood.Range(func(k, v any) bool { counts[k.(int)] = v.(*atomic.Int64).Load(); return true })
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	t.Logf("field flood for %v from one address: %v (status: count), %d transport errors; neighbour: %d tokens (%.0f/s), %d failed, p50 %v, p99 %v",
		length, counts, floodTransport.Load(), len(latencies), float64(len(latencies))/length.Seconds(), failed,
		pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond))
	for status := range counts {
		if status != http.StatusBadRequest && status != http.StatusTooManyRequests {
			t.Errorf("a flood request was answered %d", status)
		}
	}
	if failed > 0 || len(latencies) == 0 {
		t.Errorf("the neighbour got %d tokens and %d failures (the first: %s); want every request served", len(latencies), failed, firstFailure)
	}

	// Connection limit: a token service of its own with --max-conns 32,
	// 100 idle keep-alive connections, then a fresh client.
	env := append(top.redisEnv(), "MAX_CONNS=32")
	limited := top.startServer(t, "auth-limited", env, "authserver", "--keys", filepath.Join(top.home, "jwks.json"),
		"--issuer", top.edge, "--audience", audience)
	waitOK(t, limited.base+"/healthz", limited.process)
	idle := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 200, MaxConnsPerHost: 200}}
	var iw sync.WaitGroup
	for range 100 {
		iw.Go(func() {
			resp, err := idle.Get(limited.base + "/healthz")
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	iw.Wait()
	fresh := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var took []time.Duration
	for range 5 {
		start := time.Now()
		resp, err := fresh.Get(limited.base + "/healthz")
		if err != nil {
			t.Fatalf("fresh /healthz with 100 idle connections at --max-conns 32: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("fresh /healthz: %d", resp.StatusCode)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("100 idle keep-alive connections at --max-conns 32: 5 fresh /healthz answered 200, median %v, max %v",
		took[2].Round(time.Microsecond), took[4].Round(time.Microsecond))

	// Content-Length and Transfer-Encoding together: the answer says
	// Connection: close and the server closes the connection.
	conn, err := net.Dial("tcp", strings.TrimPrefix(limited.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	raw := "POST /api/v1/oauth/token/ HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
		"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(conn) // ends only when the server closes
	if err != nil {
		t.Fatalf("reading the CL+TE answer: %v (%q)", err, answer)
	}
	if !strings.HasPrefix(string(answer), "HTTP/1.1 ") || !strings.Contains(strings.ToLower(string(answer)), "connection: close") {
		t.Errorf("CL+TE answer without Connection: close: %q", answer)
	}
	t.Logf("CL+TE request: answered %q, connection closed by the server", strings.SplitN(string(answer), "\r\n", 2)[0])
}
