package tokenserver

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// TestRedisUnavailable (point 8): with its Redis gone the service answers
// 503 temporarily_unavailable with Retry-After and issues nothing; /readyz
// says so; once Redis is back, the same handler answers 200 again.
func TestRedisUnavailable(t *testing.T) {
	t.Parallel()
	// Append-only so that the client record survives the crash.
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "always")
	rdb, err := redisconn.Open(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(t, withRedis(rdb))
	id, secret := e.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	tok := e.token(t, e.url, id, secret, "")

	srv.Kill()

	unavailable := func(r reply) {
		t.Helper()
		wantStatus(t, r, http.StatusServiceUnavailable)
		wantHeaders(t, r, oauthHeaders(map[string]string{"Retry-After": "5", "WWW-Authenticate": ""}))
		wantJSON(t, r, bodyUnavailable)
	}
	unavailable(post(t, e.url+PathToken, formType, grant(), basic(id, secret)))
	unavailable(post(t, e.url+PathToken, jsonType, jsonBody("grant_type", "client_credentials", "client_id", id, "client_secret", secret)))
	unavailable(introspect(t, e.url, id, secret, tok))

	r := get(t, e.url+"/readyz")
	wantStatus(t, r, http.StatusServiceUnavailable)
	wantHeaders(t, r, jsonHeaders(map[string]string{"Retry-After": "5", "Cache-Control": "no-store"}))
	wantJSON(t, r, `{"detail":"redis unavailable"}`)
	// What needs no Redis keeps working.
	r = get(t, e.url+"/healthz")
	wantStatus(t, r, http.StatusOK)
	wantJSON(t, r, `{"status":"ok"}`)
	wantStatus(t, get(t, e.url+PathJWKS), http.StatusOK)
	// Requests refused before Redis is asked stay what they are.
	wantStatus(t, post(t, e.url+PathToken, formType, form("grant_type", "password"), basic(id, secret)), http.StatusBadRequest)

	srv.Start()
	// go-redis redials in the background after failed dials; wait until the
	// service reports ready.
	testwait.Until(t, 15*time.Second, "the service ready after Redis restarted", func() error {
		if r := get(t, e.url+"/readyz"); r.Status != http.StatusOK {
			return fmt.Errorf("/readyz %d %s", r.Status, r.Body)
		}
		return nil
	})
	tokenReply(t, post(t, e.url+PathToken, formType, grant(), basic(id, secret)), "events.subscribe")
	r = introspect(t, e.url, id, secret, tok)
	wantStatus(t, r, http.StatusOK)
	if decode(t, r.Body)["active"] != true {
		t.Errorf("token issued before the outage: %s", r.Body)
	}
}
