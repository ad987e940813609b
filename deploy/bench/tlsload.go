package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/partnerapi/authplatform/pkg/clientcert/clientcerttest"
)

// The token-tls scenarios (issue 59 point 5a) measure the token endpoint
// over TLS ended by the authserver itself (--tls-cert), each request with
// a client certificate, so that its token is certificate-bound (RFC 8705
// section 3): token-tls with a new TLS connection, and so a full
// handshake with the certificate, per request, the way Keycloak's sizing
// guide counts client-credentials grants; token-tls-keepalive over kept
// connections, the TLS cost left being the records' encryption and the
// binding. wrk can present no client certificate, so the load is this
// Go generator (tlsLoad), with wrk's result fields: the same number of
// connections, the same latencies; its CPU is this process's (the harness
// does little else meanwhile).

// startAuthTLS starts the second authserver, the one that ends TLS, with
// a server certificate of a CA made here, and the client certificate the
// load presents; every file in the run's directory.
func (s *stack) startAuthTLS(ctx context.Context, env []string, keys string) error {
	ca := clientcerttest.NewCA("bench server CA")
	server := ca.IssueServer()
	certFile, keyFile := filepath.Join(s.dir, "tls-server.pem"), filepath.Join(s.dir, "tls-server-key.pem")
	if err := os.WriteFile(certFile, server.CertPEM(), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(keyFile, server.KeyPEM(), 0o600); err != nil {
		return err
	}
	s.tlsRoots, s.tlsClientCert = ca.Pool(), clientcerttest.SelfSigned(clientcerttest.Names{CommonName: "bench client"}).TLS()
	authEnv, err := s.serverEnv(env, srvAuthTLS)
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s.authTLSURL = "https://" + addr
	if s.authTLS, err = startProcess(srvAuthTLS, s.dir, s.bins.auth, []string{"serve", "--addr", addr, "--keys", keys,
		"--issuer", s.authURL, "--audience", audience, "--tls-cert", certFile, "--tls-key", keyFile}, authEnv); err != nil {
		return err
	}
	c := &http.Client{Timeout: 2 * time.Second, Transport: s.tlsTransport(true)}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get(s.authTLSURL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if s.authTLS.exited() || time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not ready at %s: %v\n%s", srvAuthTLS, s.authTLSURL, err, s.authTLS.tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tlsTransport presents the load's client certificate to the TLS
// authserver; keepAlive false makes every request a new connection with a
// full handshake (no session resumption: no session cache).
func (s *stack) tlsTransport(keepAlive bool) *http.Transport {
	return &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: s.tlsRoots, Certificates: []tls.Certificate{s.tlsClientCert}, MinVersion: tls.VersionTLS12},
		DisableKeepAlives:   !keepAlive,
		MaxIdleConnsPerHost: 1,
		ForceAttemptHTTP2:   false,
	}
}

// tlsLoad runs the token-tls load of run (its Data the token load's
// Authorization lines, its Connections the concurrent requesters) and
// reports it as wrk would, with the CPU this process spent.
func (s *stack) tlsLoad(ctx context.Context, run wrkRun, keepAlive bool) (wrkResult, time.Duration, string, error) {
	lines, err := readLines(run.Data)
	if err != nil || len(lines) == 0 {
		return wrkResult{}, 0, "", fmt.Errorf("token-tls data %s: %d lines, %v", run.Data, len(lines), err)
	}
	cpu0 := selfCPU()
	start := time.Now()
	stop := start.Add(run.Duration)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		res       wrkResult
		wg        sync.WaitGroup
	)
	for i := range max(run.Connections, 1) {
		wg.Go(func() {
			tr := s.tlsTransport(keepAlive)
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			var own []time.Duration
			var status, failed int64
			for n := i; time.Now().Before(stop) && ctx.Err() == nil; n += run.Connections {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.authTLSURL+run.Path, strings.NewReader("grant_type=client_credentials"))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.Header.Set("Authorization", lines[n%len(lines)])
				t0 := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					failed++
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				own = append(own, time.Since(t0))
				if resp.StatusCode >= 400 {
					status++
				}
			}
			mu.Lock()
			latencies = append(latencies, own...)
			res.Status += status
			res.Connect += failed
			mu.Unlock()
		})
	}
	wg.Wait()
	res.Duration = time.Since(start)
	res.Requests = int64(len(latencies))
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	res.P50, res.P99, res.P999 = pct(0.50), pct(0.99), pct(0.999)
	if len(latencies) > 0 {
		res.Max = latencies[len(latencies)-1]
	}
	out := fmt.Sprintf("BENCH_RESULT requests=%d duration_us=%d status=%d connect=%d read=0 write=0 timeout=0 p50_us=%d p99_us=%d p999_us=%d max_us=%d exhausted=0\n",
		res.Requests, res.Duration.Microseconds(), res.Status, res.Connect, res.P50.Microseconds(), res.P99.Microseconds(), res.P999.Microseconds(), res.Max.Microseconds())
	return res, selfCPU() - cpu0, out, ctx.Err()
}

// readLines reads a data file's lines.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
