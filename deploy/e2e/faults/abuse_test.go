package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/authserver/tokenserver"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/ratelimit/ratelimittest"
)

const blockedBody = `{"error":"slow_down","error_description":"Too many failed client authentications from this address; retry after the number of seconds in Retry-After"}`

// TestFailedAuthFlood (point 8): a flood of invalid_client for one client
// from one address is cut off at the documented limit
// (deploy/docs/abuse-limits.md: 60 failed client authentications per
// address and client per minute). After the 60th failure the address gets
// 429 slow_down with Retry-After for that client, without its credentials
// being checked, even when they are right, on both endpoints and however
// it dresses up X-Forwarded-For; other addresses are served; when the
// window frees, the address is served again. A concurrent flood is cut
// off exactly at the limit: the budget is reserved in the same Redis
// script that checks the secret.
func TestFailedAuthFlood(t *testing.T) {
	t.Parallel()
	const limit = 60
	if tokenserver.DefaultFailuresPerMinute != limit {
		t.Fatalf("DefaultFailuresPerMinute = %d; deploy/docs/abuse-limits.md documents %d", tokenserver.DefaultFailuresPerMinute, limit)
	}
	page, err := os.ReadFile("../../docs/abuse-limits.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "60 failed client authentications per address and client per minute") {
		t.Errorf("deploy/docs/abuse-limits.md no longer documents the per-address and per-client limit of %d", limit)
	}

	s := newStack(t) // the default limit
	id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	const attacker, bystander = "203.0.113.66", "198.51.100.66"
	const flood = 100
	counts := map[int]int{}
	before := s.checked()
	for i := range flood {
		r := s.post(pathToken, formType, grant, basic(id, clients.NewSecret()), from(attacker))
		counts[r.Status]++
		switch {
		case i < limit && r.Status != http.StatusUnauthorized:
			t.Fatalf("failure %d: status %d %s, want 401", i+1, r.Status, r.Body)
		case i >= limit:
			// The failures (at one instant of the injected clock) count
			// until they are a minute old.
			if r.Status != http.StatusTooManyRequests || string(r.Body) != blockedBody || r.Header.Get("Retry-After") != "60" {
				t.Fatalf("request %d after %d failures: %d %s Retry-After=%q; want 429 slow_down, Retry-After 60",
					i+1, limit, r.Status, r.Body, r.Header.Get("Retry-After"))
			}
		}
	}
	if n := s.checked() - before; n != limit {
		t.Errorf("%d secrets checked for a flood of %d; want %d (the rest refused unchecked)", n, flood, limit)
	}
	blocked := func(r reply, what string) {
		t.Helper()
		if r.Status != http.StatusTooManyRequests || string(r.Body) != blockedBody || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %d %s, want 429 slow_down with Retry-After", what, r.Status, r.Body)
		}
	}
	blocked(s.post(pathToken, formType, grant, basic(id, secret), from(attacker)), "right credentials from the flooding address")
	blocked(s.post(pathIntrospect, formType, form("token", "x"), basic(id, secret), from(attacker)), "introspection from the flooding address")
	blocked(s.post(pathToken, formType, grant, basic(id, secret), from("192.0.2.1, "+attacker)), "forged X-Forwarded-For before the address")
	if r := s.post(pathToken, formType, grant, basic(id, secret), from(bystander)); r.Status != http.StatusOK {
		t.Errorf("another address: %d %s, want 200", r.Status, r.Body)
	}
	// The failure count of the address and client stops at the limit.
	if n := ratelimittest.Total(s.rdb.Get(context.Background(), s.prefix+"{"+id+"}:rw:fail:"+attacker).Val()); n != limit {
		t.Errorf("the failure count of one address is %d, want the limit %d", n, limit)
	}
	// A minute later, as Retry-After said, the window has freed.
	s.rate.Add(time.Minute)
	if r := s.post(pathToken, formType, grant, basic(id, secret), from(attacker)); r.Status != http.StatusOK {
		t.Errorf("after the window: %d %s, want 200", r.Status, r.Body)
	}

	// Concurrent flood from another address: exactly the limit is checked.
	const workers, each, swarm = 8, 50, "203.0.113.67"
	var unauthorized, slowed, other atomic.Int64
	before = s.checked()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				switch s.post(pathToken, formType, grant, basic(id, clients.NewSecret()), from(swarm)).Status {
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
	wg.Wait()
	checked := s.checked() - before
	if unauthorized.Load() != limit || checked != limit || other.Load() != 0 {
		t.Errorf("concurrent flood of %d: %d answered 401 after %d secret checks, %d slowed, %d other; want exactly %d checked",
			workers*each, unauthorized.Load(), checked, slowed.Load(), other.Load(), limit)
	}
	t.Logf("sequential flood of %d from one address: %v (status: count), %d secrets checked; concurrent flood of %d: %d x 401, %d x 429, %d secrets checked",
		flood, counts, limit, workers*each, unauthorized.Load(), slowed.Load(), checked)
}

// TestRandomClientIDFlood (point 8): 500 token requests with random client
// ids (well-formed, malformed, huge) and 500 API calls with tokens of random
// client ids add no key to Redis at all: failures that name no client are
// counted per address in each replica's memory (the address ceiling), not
// in Redis.
func TestRandomClientIDFlood(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	f := newForger(t, s)
	ctx := context.Background()
	s.client(clients.AudiencePharma) // the registry is not empty
	beforeKeys := keysUnder(t, s.rdb, s.prefix)
	beforeAll := allKeys(t, s)

	var ids []string
	statuses := map[int]int{}
	for i := range 500 {
		id := clients.NewClientID()
		switch i % 5 {
		case 3:
			id = "svc_" + strings.Repeat(strconv.Itoa(i), 40) // not of the form
		case 4:
			id = fmt.Sprintf("svc_{%d}:client", i) // a hash tag and a key suffix
		}
		ids = append(ids, id)
		// 50 addresses, 10 requests each: under the per-address limit, so
		// every request reaches the registry.
		addr := fmt.Sprintf("198.18.0.%d", i%50)
		var r reply
		if i%2 == 0 {
			r = s.post(pathToken, formType, grant, basic(id, clients.NewSecret()), from(addr))
		} else {
			r = s.post(pathToken, formType, form("grant_type", "client_credentials", "client_id", id, "client_secret", "x"), from(addr))
		}
		statuses[r.Status]++
	}
	// Tokens signed by the real key for clients that do not exist, and
	// forged ones: the resource server admits none and counts nothing.
	for i := range 500 {
		id := clients.NewClientID()
		ids = append(ids, id)
		tok := ed(f.real, f.header(), validClaims(id, "", 1, s.tokenNow))
		if i%2 == 1 {
			tok = ed(f.evil, f.header("kid", f.evilKid), validClaims(id, "", 1, s.tokenNow))
		}
		statuses[s.get(pathMe, bearer(tok), from("198.18.1.1")).Status]++
	}
	if statuses[http.StatusUnauthorized] != 1000 {
		t.Fatalf("answers %v, want 1000 x 401", statuses)
	}

	var added []string
	for _, k := range keysUnder(t, s.rdb, s.prefix) {
		if !slices.Contains(beforeKeys, k) {
			added = append(added, k)
		}
	}
	for _, k := range added {
		for _, id := range ids {
			if strings.Contains(k, id) {
				t.Errorf("key %s was created for a random client id", k)
			}
		}
		ttl := s.rdb.PTTL(ctx, k).Val()
		if ttl <= 0 || ttl > time.Minute {
			t.Errorf("key %s has TTL %v: it would stay", k, ttl)
		}
		if !strings.Contains(k, "{authfail:") {
			t.Errorf("unexpected key %s", k)
		}
	}
	if len(added) != 0 {
		t.Errorf("%d keys added; want none", len(added))
	}
	// Nothing outside the prefix either.
	for k := range allKeys(t, s) {
		if beforeAll[k] {
			continue
		}
		for _, id := range ids {
			if strings.Contains(k, id) {
				t.Errorf("key %s outside the prefix was created for a random client id", k)
			}
		}
	}
	t.Logf("1000 requests with random client ids (%v): %d keys before, %d added",
		statuses, len(beforeKeys), len(added))
}

// allKeys lists every key of the test Redis.
func allKeys(t testing.TB, s *stack) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, k := range keysUnder(t, s.rdb, "") {
		out[k] = true
	}
	return out
}

// countingReader serves n bytes of a form body and records how many were
// read; past max it fails, so a handler that reads on is caught.
type countingReader struct {
	n, max int64
	read   atomic.Int64
}

var errReadTooFar = errors.New("read past the point where the request should have been refused")

func (c *countingReader) Read(p []byte) (int, error) {
	r := c.read.Load()
	if r >= c.n {
		return 0, io.EOF
	}
	if r >= c.max {
		return 0, errReadTooFar
	}
	k := int64(len(p))
	k = min(k, c.n-r, c.max-r)
	for i := range p[:k] {
		p[i] = 'a'
	}
	c.read.Add(k)
	return int(k), nil
}

// TestOversizedRefusedEarly (point 8): bodies over 64 KiB are refused with
// 400 invalid_request before they are read whole: with a declared length
// without reading a byte, chunked after reading at most the cap plus one
// byte, on the token and introspection endpoints, over the wire as well.
func TestOversizedRefusedEarly(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	id, secret := s.client(clients.AudiencePharma)
	const size = 10 << 20
	margin := int64(tokenserver.MaxBodyBytes + 4096)
	for _, path := range []string{pathToken, pathIntrospect} {
		for _, declared := range []bool{true, false} {
			body := &countingReader{n: size, max: margin}
			req := httptest.NewRequest(http.MethodPost, path, body)
			req.ContentLength = -1
			if declared {
				req.ContentLength = size
			}
			req.Header.Set("Content-Type", formType)
			basic(id, secret)(req)
			rec := httptest.NewRecorder()
			s.handler.ServeHTTP(rec, req)
			read := body.read.Load()
			want := `{"error":"invalid_request","error_description":"request body is larger than 64 KiB"}`
			if rec.Code != http.StatusBadRequest || rec.Body.String() != want || rec.Header().Get("Connection") != "close" {
				t.Errorf("%s, declared=%v: %d %s (Connection %q), want 400 and close", path, declared, rec.Code, rec.Body, rec.Header().Get("Connection"))
			}
			limit := int64(tokenserver.MaxBodyBytes + 1)
			if declared {
				limit = 0
			}
			if read > limit {
				t.Errorf("%s, declared=%v: %d bytes of a %d-byte body read before refusing; want at most %d", path, declared, read, size, limit)
			}
			t.Logf("%s, length declared=%v: 400 after reading %d of %d bytes", path, declared, read, size)
		}
	}

	// Over the wire (production's net/http server), counting what the
	// server has read when it starts answering. Declared 10 MiB and no byte of body sent: the answer
	// comes having read the head only.
	head := "POST " + pathToken + " HTTP/1.1\r\nHost: x\r\nContent-Type: " + formType + "\r\n"
	r, err := s.wire([]byte(head + "Content-Length: " + strconv.Itoa(size) + "\r\n\r\n"))
	if err != nil || r.Status != http.StatusBadRequest {
		t.Errorf("declared 10 MiB, nothing sent: %v %d %s", err, r.Status, r.Body)
	}
	if n := s.readBeforeAnswer.Load(); n > int64(len(head)+40) {
		t.Errorf("declared 10 MiB: the server read %d bytes before answering", n)
	}
	// Chunked: 80 KiB of chunks, then the client waits for the answer. The
	// server must answer having read the cap (plus its read buffer), not
	// drain on: net/http would read up to 256 KiB more of an unread body,
	// and wait for it, before sending the answer, unless the answer closes
	// the connection.
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	chunk := strings.Repeat("a", 8<<10)
	var body strings.Builder
	for range 10 {
		fmt.Fprintf(&body, "%x\r\n%s\r\n", len(chunk), chunk)
	}
	go func() { _, _ = io.WriteString(conn, head+"Transfer-Encoding: chunked\r\n\r\n"+body.String()) }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("chunked 80 KiB, no last chunk: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	read := s.readBeforeAnswer.Load()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "larger than 64 KiB") || !resp.Close {
		t.Errorf("chunked 80 KiB, no last chunk: %d %s (close=%v), want 400 and the connection closed", resp.StatusCode, b, resp.Close)
	}
	// The cap, the chunk framing read with it, and one read buffer.
	if bound := int64(tokenserver.MaxBodyBytes + 8<<10 + 2*len(head)); read > bound {
		t.Errorf("chunked: the server read %d of %d bytes sent before answering; want at most %d", read, len(head)+body.Len(), bound)
	}
	t.Logf("wire: declared 10 MiB answered 400 after reading the head; chunked %d bytes sent, %d read before the 400", len(head)+body.Len(), read)
}
