package httpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/httpserver"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// peakListener records the most connections open at once.
type peakListener struct {
	net.Listener
	mu         sync.Mutex
	open, peak int
	// accepted receives one value per accepted connection (dropped when
	// nobody reads and the buffer is full).
	accepted chan struct{}
}

func (l *peakListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.peak = max(l.peak, l.open)
	l.mu.Unlock()
	select {
	case l.accepted <- struct{}{}:
	default:
	}
	return &peakConn{Conn: c, l: l}, nil
}

func (l *peakListener) Peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peak
}

type peakConn struct {
	net.Conn
	l    *peakListener
	once sync.Once
}

func (c *peakConn) Close() error {
	c.once.Do(func() { c.l.mu.Lock(); c.l.open--; c.l.mu.Unlock() })
	return c.Conn.Close()
}

func parts(p ...string) []string { return p }

// serveLimited serves a handler answering "ok" with a limit of max.
func serveLimited(t *testing.T, max int) (*peakListener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pl := &peakListener{Listener: ln, accepted: make(chan struct{}, 64)}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	go func() {
		served <- httpserver.Serve(ctx, pl, h, slog.New(slog.DiscardHandler), httpserver.MaxConns(max))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return pl, ln.Addr().String()
}

// keepAliveConn opens a connection, makes one request on it and leaves it
// open and idle, as a keep-alive client (or an attacker) would.
func keepAliveConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	_ = c.SetDeadline(time.Time{})
	return c
}

// TestConnectionLimitShedsIdle: with a limit of 16, 40 clients that each
// make a request and then hold their connection idle (keep-alive) never
// have more than 16 connections served at once, and a fresh connection's
// /healthz is answered at once: from seven eighths of the limit keep-alive
// is off and idle connections are closed, so nobody waits for the
// 120-second idle timeout.
func TestConnectionLimitShedsIdle(t *testing.T) {
	const limit = 16
	pl, addr := serveLimited(t, limit)
	var idle []net.Conn
	for range 40 {
		idle = append(idle, keepAliveConn(t, addr))
	}
	start := time.Now()
	// A fresh client: answered, or keepAliveConn fails the test after its
	// 10 s, well within the idle timeout. How soon is the long suites'
	// check.
	c := keepAliveConn(t, addr)
	c.Close()
	waited := time.Since(start)
	redistest.AtMost(t, fmt.Sprintf("a fresh connection's answer with %d idle ones open", len(idle)), waited, httpserver.ReadHeaderTimeout)
	if p := pl.Peak(); p > limit {
		t.Errorf("%d connections served at once, limit %d", p, limit)
	}
	// The idle connections were closed by the server (EOF), not left to
	// their idle timeout.
	closed := 0
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed < len(idle)-limit {
		t.Errorf("%d of %d idle connections closed by the server", closed, len(idle))
	}
	t.Logf("40 idle keep-alive connections, limit %d: peak %d served, %d closed by the server, fresh client answered in %s", limit, pl.Peak(), closed, waited)
}

// TestConnectionLimitQueues (long): connections that send nothing hold
// their slot until ReadHeaderTimeout (5 s); a client beyond the limit waits
// in the accept queue meanwhile, is not refused, and is answered once a
// slot frees.
func TestConnectionLimitQueues(t *testing.T) {
	redistest.Long(t)
	const limit = 8
	pl, addr := serveLimited(t, limit)
	for range limit {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	// The server holds every slot once it has accepted them all.
	for i := range limit {
		select {
		case <-pl.accepted:
		case <-time.After(5 * time.Second):
			t.Fatalf("the server accepted %d of %d silent connections", i, limit)
		}
	}
	start := time.Now()
	c := keepAliveConn(t, addr)
	c.Close()
	waited := time.Since(start)
	if waited > httpserver.ReadHeaderTimeout+2*time.Second {
		t.Errorf("queued client answered after %s", waited)
	}
	if p := pl.Peak(); p > limit {
		t.Errorf("%d connections served at once, limit %d", p, limit)
	}
	t.Logf("%d silent connections at a limit of %d: the next client was answered after %s", limit, limit, waited)
}

// TestDefaultMaxConns: sized from RLIMIT_NOFILE with headroom.
func TestDefaultMaxConns(t *testing.T) {
	n := httpserver.DefaultMaxConns()
	if n < 64 {
		t.Errorf("DefaultMaxConns = %d", n)
	}
	t.Logf("DefaultMaxConns on this machine: %d", n)
}

// probe is a request net/http answers itself, 417 Expectation Failed (an
// Expect it does not know), closing the connection after: answered, it
// shows that the connection was kept after the answers before it.
const probe = "GET /probe HTTP/1.1\r\nHost: x\r\nExpect: probe\r\n\r\n"

// rawExchange writes each part but the last to a new connection and reads
// one answer after each, then writes the last followed by probe and reads
// answers until the probe's or until the server closes the connection. It
// returns the statuses before the probe's, whether the server closed the
// connection before answering the probe, and whether each answer said
// Connection: close. No read waits for silence: each has only a hang guard.
func rawExchange(t *testing.T, addr string, parts ...string) (statuses []int, closed bool, conn []bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	write := func(s string) {
		if _, err := io.WriteString(c, s); err != nil {
			t.Fatal(err)
		}
	}
	// read reads the next answer (nil once the server closed); the probe's
	// is not counted.
	read := func() *http.Response {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("after %d answers: no answer and no close in 5 s", len(statuses))
		}
		if err != nil {
			return nil
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusExpectationFailed {
			statuses = append(statuses, resp.StatusCode)
			conn = append(conn, resp.Close)
		}
		return resp
	}
	for i, part := range parts[:len(parts)-1] {
		write(part)
		if read() == nil {
			t.Fatalf("no answer to part %d", i+1)
		}
	}
	write(parts[len(parts)-1] + probe)
	for {
		switch resp := read(); {
		case resp == nil:
			return statuses, true, conn
		case resp.StatusCode == http.StatusExpectationFailed:
			return statuses, false, conn
		}
	}
}

// TestContentLengthWithTransferEncoding (on the wire): a request with both
// Content-Length and Transfer-Encoding is answered with Connection: close
// and its connection is closed (RFC 9112 section 6.1), so a request
// smuggled behind it is never answered; requests with one of them keep the
// connection, including when a body looks like such a head.
func TestContentLengthWithTransferEncoding(t *testing.T) {
	_, addr := serveLimited(t, 0)
	const next = "GET /next HTTP/1.1\r\nHost: x\r\n\r\n"
	chunkedBody := "5\r\nhello\r\n0\r\n\r\n"
	fakeHead := "POST /x HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
	for _, tc := range []struct {
		name     string
		raw      []string
		statuses int
		close    bool
	}{
		{"CL and TE", parts("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody + next), 1, true},
		{"TE and CL, other case and order", parts("POST /x HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\ncontent-length: 0\r\n\r\n" + chunkedBody + next), 1, true},
		{"CL and TE on the second request", parts("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab", "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\nTransfer-Encoding: chunked\r\n\r\n"+chunkedBody+next), 2, true},
		{"CL only", parts("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + next), 2, false},
		{"TE only", parts("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody + next), 2, false},
		{"CL body that looks like a CL+TE head", parts(fmt.Sprintf("POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(fakeHead), fakeHead) + next), 2, false},
		{"chunk that looks like a CL+TE head", parts(fmt.Sprintf("POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\nX-Trailer: 1\r\n\r\n", len(fakeHead), fakeHead) + next), 2, false},
		{"no body", parts("GET /x HTTP/1.1\r\nHost: x\r\n\r\n" + next), 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			statuses, closed, conn := rawExchange(t, addr, tc.raw...)
			if len(statuses) != tc.statuses || closed != tc.close {
				t.Errorf("%d answers %v, closed %v (Connection: close %v); want %d answers, closed %v", len(statuses), statuses, closed, conn, tc.statuses, tc.close)
			}
			for i, c := range conn {
				if want := tc.close && i == len(conn)-1; c != want {
					t.Errorf("answer %d: Connection: close %v, want %v", i+1, c, want)
				}
			}
		})
	}
}
