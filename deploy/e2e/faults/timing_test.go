package faults

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// commandLog records the Redis commands a client sends (name and, for
// scripts, nothing more: the keys differ by client id by design).
type commandLog struct {
	mu   sync.Mutex
	cmds []string
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.mu.Lock()
		l.cmds = append(l.cmds, cmd.Name())
		l.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		l.mu.Lock()
		for _, c := range cmds {
			l.cmds = append(l.cmds, "pipeline:"+c.Name())
		}
		l.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns the commands logged since the last take, without the
// handshake of a connection dialled meanwhile (HELLO, CLIENT SETINFO):
// that is the connection's cost, not the path's, and which request meets
// a new connection depends on the pool (with automatic pipelining, the
// pipeliner's own pool dials when its first batch goes out).
func (l *commandLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.cmds[:0]
	for _, c := range l.cmds {
		switch strings.TrimPrefix(c, "pipeline:") {
		case "hello", "client":
		default:
			kept = append(kept, c)
		}
	}
	out := strings.Join(kept, " ")
	l.cmds = nil
	return out
}

// TestInvalidClientOnePath (point 5): an unknown client, a wrong secret and
// a revoked client each cost exactly one digest comparison and the same
// Redis commands, and get byte-identical answers, on the token endpoint and
// on introspection, with Basic and with form credentials. (An id that
// cannot be an id at all skips the registry read: its form is public, so
// that reveals nothing; it still costs one digest comparison.)
func TestInvalidClientOnePath(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	log := &commandLog{}
	s.rdb.AddHook(log)
	id, secret := s.client(clients.AudienceHospital, clients.ScopePatientsRead)
	revoked, revokedSecret := s.client(clients.AudienceHospital, clients.ScopePatientsRead)
	if _, err := s.store.Revoke(context.Background(), revoked); err != nil {
		t.Fatal(err)
	}
	// Warm up: the first run of a script on a fresh Redis loads it
	// (EVALSHA, then EVAL), which is not the path's own cost.
	s.post(pathToken, formType, grant, basic(id, "svc_cs_warm-up"), from("198.51.100.19"))
	wrong := clients.NewSecret() // as long as a real secret, so hashing costs the same
	attempts := []struct{ name, id, secret string }{
		{"unknown client", clients.NewClientID(), secret},
		{"wrong secret", id, wrong},
		{"revoked client", revoked, revokedSecret},
	}
	for _, ep := range []struct {
		name, path, body string
		form             bool
	}{
		{"token, Basic", pathToken, form("grant_type", "client_credentials", "scope", "referrals.write"), false},
		{"token, form", pathToken, form("grant_type", "client_credentials", "scope", "referrals.write"), true},
		{"introspection, Basic", pathIntrospect, form("token", "svc_at_x"), false},
	} {
		t.Run(ep.name, func(t *testing.T) {
			var firstBody []byte
			var firstHeader http.Header
			var firstCmds string
			for _, a := range attempts {
				s.rate.Add(time.Minute + time.Second) // no address limit in play
				body, opts := ep.body, mods(from("198.51.100.20"))
				if ep.form {
					body += "&" + form("client_id", a.id, "client_secret", a.secret)
				} else {
					opts = append(opts, basic(a.id, a.secret))
				}
				before := s.checked()
				log.take()
				r := s.post(ep.path, formType, body, opts...)
				cmds := log.take()
				if n := s.checked() - before; n != 1 {
					t.Errorf("%s: %d digest comparisons, want exactly 1", a.name, n)
				}
				if r.Status != http.StatusUnauthorized {
					t.Fatalf("%s: status %d %s", a.name, r.Status, r.Body)
				}
				r.Header.Del("X-Request-Id")
				r.Header.Del("Date")
				if firstBody == nil {
					firstBody, firstHeader, firstCmds = r.Body, r.Header, cmds
					t.Logf("%s: Redis commands %q", a.name, cmds)
					continue
				}
				if !bytes.Equal(r.Body, firstBody) || !equalHeaders(r.Header, firstHeader) {
					t.Errorf("%s: answer %v %s differs from %v %s", a.name, r.Header, r.Body, firstHeader, firstBody)
				}
				if cmds != firstCmds {
					t.Errorf("%s: Redis commands %q, but %q for %s", a.name, cmds, firstCmds, attempts[0].name)
				}
			}
		})
	}
	// Malformed ids: one digest comparison each, the same answer, no
	// registry read.
	for _, bad := range []string{"svc_!", secret, strings.Repeat("x", 5000), ""} {
		s.rate.Add(time.Minute + time.Second)
		before := s.checked()
		log.take()
		r := s.post(pathToken, formType, grant, basic(bad, secret), from("198.51.100.21"))
		if n := s.checked() - before; n != 1 || r.Status != http.StatusUnauthorized {
			t.Errorf("malformed id %.10q: %d digest comparisons, status %d", bad, n, r.Status)
		}
		if cmds := log.take(); strings.Contains(cmds, "hmget") {
			t.Errorf("malformed id %.10q read the registry: %q", bad, cmds)
		}
	}
}

func equalHeaders(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\n") != strings.Join(b.Values(k), "\n") {
			return false
		}
	}
	return true
}

// benchInvalidClient measures one failed token request through the whole
// handler (edge, middleware, parsing, go-oauth2, Redis read, digest, the
// per-address failure count), without the network. The rate clock moves a
// minute per request, so the per-address limit never answers instead.
func benchInvalidClient(b *testing.B, credentials func(s *stack) (string, string)) {
	s := newStack(b)
	id, secret := credentials(s)
	body := form("grant_type", "client_credentials")
	auth := basic(id, secret)
	b.ReportAllocs()
	for b.Loop() {
		s.rate.Add(time.Minute + time.Second)
		req := httptest.NewRequest(http.MethodPost, pathToken, strings.NewReader(body))
		req.Header.Set("Content-Type", formType)
		req.Header.Set("X-Forwarded-For", "198.51.100.30")
		auth(req)
		req.RemoteAddr = proxyAddr + ":50000"
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusUnauthorized {
			b.Fatalf("status %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkInvalidClientUnknown: an id of the right form that no client has.
func BenchmarkInvalidClientUnknown(b *testing.B) {
	benchInvalidClient(b, func(s *stack) (string, string) {
		return clients.NewClientID(), clients.NewSecret()
	})
}

// BenchmarkInvalidClientWrongSecret: a real client, a wrong secret of the
// right length.
func BenchmarkInvalidClientWrongSecret(b *testing.B) {
	benchInvalidClient(b, func(s *stack) (string, string) {
		id, _ := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
		return id, clients.NewSecret()
	})
}

// BenchmarkInvalidClientRevoked: a revoked client with its own secret.
func BenchmarkInvalidClientRevoked(b *testing.B) {
	benchInvalidClient(b, func(s *stack) (string, string) {
		id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
		if _, err := s.store.Revoke(context.Background(), id); err != nil {
			b.Fatal(err)
		}
		return id, secret
	})
}
