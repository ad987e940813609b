package tokenserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/clients/assertiontest"
)

const bodyKeysUnavailable = `{"error":"temporarily_unavailable","error_description":"The client's public keys could not be fetched from its jwks_uri; retry after the number of seconds in Retry-After"}`

// partnerKeys is a partner's jwks_uri endpoint that can go down.
type partnerKeys struct {
	url     string
	fetches atomic.Int64
	down    atomic.Bool
	mu      sync.Mutex
	served  []byte
}

func newPartnerKeys(t *testing.T, served []byte) *partnerKeys {
	p := &partnerKeys{served: served}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		if p.down.Load() {
			http.Error(w, "down for maintenance", http.StatusBadGateway)
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(p.served)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/jwks.json"
	return p
}

func (p *partnerKeys) serve(b []byte) { p.mu.Lock(); p.served = b; p.mu.Unlock() }

// TestJWKSURIOutage (issue 26 point 3): while a partner's jwks_uri is
// down, its valid assertions are answered 503 temporarily_unavailable with
// Retry-After, never invalid_client, and spend nothing of its failure
// budget; the fetch is tried again within seconds, logged with the client
// id and counted; once the endpoint is back the next assertion gets a
// token. A refetch for a new kid that fails keeps the keys fetched before.
func TestJWKSURIOutage(t *testing.T) {
	k1, k2 := assertiontest.NewKey(t, "one", jwa.ES256()), assertiontest.NewKey(t, "two", jwa.ES256())
	p := newPartnerKeys(t, assertiontest.JWKS(t, k1))
	e := newEnv(t, withFailures(3), withJWKSPolicy(JWKSPolicy{AllowHTTP: true, AllowPrivate: true}))
	id := e.keyedClient(clients.ClientKeySource{URL: p.url, AllowHTTP: true})
	unavailable := func(key assertiontest.Key) {
		t.Helper()
		r := post(t, e.url+PathToken, formType, assertionForm(key.Sign(t, assertiontest.Claims(id, testIssuer, e.now.Now()))))
		wantStatus(t, r, http.StatusServiceUnavailable)
		wantHeaders(t, r, oauthHeaders(map[string]string{"Retry-After": "2", "WWW-Authenticate": ""}))
		wantJSON(t, r, bodyKeysUnavailable)
	}
	p.down.Store(true)
	for range 10 { // more than the failure budget of 3
		unavailable(k1)
	}
	if n := p.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches during the retry interval, want 1", n)
	}
	e.now.Add(jwksRetryEvery - time.Second)
	unavailable(k1)
	e.now.Add(time.Second) // jwksRetryEvery after the failed try: tried again
	unavailable(k1)
	if n := p.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches %v after a failed one, want 2", n, jwksRetryEvery)
	}
	p.down.Store(false)
	e.now.Add(jwksRetryEvery)
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k1.Sign(t, assertiontest.Claims(id, testIssuer, e.now.Now())))), clients.ScopePatientsRead)
	// Nothing of the outage counted as a failure or as a checked credential.
	if got := counter(t, e.metrics, "partnerapi_client_credentials_checked_total", map[string]string{"method": clients.AuthPrivateKeyJWT}); got != 1 {
		t.Errorf("credentials checked %v, want 1 (the assertion after the outage)", got)
	}
	for result, want := range map[string]float64{"failure": 2, "success": 1, "refused": 0} {
		if got := counter(t, e.metrics, "partnerapi_jwks_uri_fetches_total", map[string]string{"result": result}); got != want {
			t.Errorf("jwks_uri fetches{result=%q} = %v, want %v", result, got, want)
		}
	}
	if got := counter(t, e.metrics, "partnerapi_token_refusals_total", map[string]string{"endpoint": "token", "reason": "temporarily_unavailable"}); got != 12 {
		t.Errorf("temporarily_unavailable refusals %v, want 12", got)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"jwks_uri fetch failure"`) || !strings.Contains(logs, `"client_id":"`+id+`"`) || !strings.Contains(logs, "502") {
		t.Errorf("the failed fetch was not logged with the client id and the cause:\n%s", logs)
	}
	if strings.Contains(logs, `"msg":"token service error"`) {
		t.Errorf("a partner's outage logged as the service's own error:\n%s", logs)
	}

	// The partner publishes a new key while its endpoint fails: the new
	// kid cannot be checked (503), the known one keeps working.
	p.serve(assertiontest.JWKS(t, k1, k2))
	p.down.Store(true)
	e.now.Add(jwksRefetchEvery)
	unavailable(k2)
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k1.Sign(t, assertiontest.Claims(id, testIssuer, e.now.Now())))), clients.ScopePatientsRead)
	p.down.Store(false)
	e.now.Add(jwksRetryEvery)
	tokenReply(t, post(t, e.url+PathToken, formType, assertionForm(k2.Sign(t, assertiontest.Claims(id, testIssuer, e.now.Now())))), clients.ScopePatientsRead)
}

// TestJWKSURIConcurrent (issue 26 point 3): concurrent assertions naming
// a kid the keys lack, while the clock moves, refetch at most once per
// jwksRefetchEvery and race on nothing (run with -race).
func TestJWKSURIConcurrent(t *testing.T) {
	k := assertiontest.NewKey(t, "one", jwa.ES256())
	stranger := assertiontest.NewKey(t, "nobody", jwa.ES256())
	p := newPartnerKeys(t, assertiontest.JWKS(t, k))
	e := newEnv(t, withJWKSPolicy(JWKSPolicy{AllowHTTP: true, AllowPrivate: true}))
	id := e.keyedClient(clients.ClientKeySource{URL: p.url, AllowHTTP: true})
	// The clock moves jwksRefetchEvery after every sixth answer: 10 times
	// while the 64 requests run.
	const moves = 10
	var answered atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 8 { // within the token limit (30) and the failure budget (60)
				key, status := k, http.StatusOK
				if (g+i)%3 != 0 {
					key, status = stranger, http.StatusUnauthorized
				}
				// exp 5 minutes ahead: the clock moves 100 s while the
				// requests run, more than a minute's assertion (plus the
				// 30 s leeway) outlives on a loaded machine.
				claims := assertiontest.Claims(id, testIssuer, e.now.Now())
				claims["exp"] = e.now.Now().Add(5 * time.Minute).Unix()
				r := post(t, e.url+PathToken, formType, assertionForm(key.Sign(t, claims)))
				if r.Status != status {
					t.Errorf("kid %s: %d %s", key.KID, r.Status, r.Body)
				}
				if answered.Add(1)%6 == 0 {
					e.now.Add(jwksRefetchEvery)
				}
			}
		})
	}
	wg.Wait()
	if n := p.fetches.Load(); n < 1 || n > 1+moves {
		t.Fatalf("%d fetches, want 1 and at most one per %v the clock moved (%d)", n, jwksRefetchEvery, moves)
	}
}

// TestKeysConcurrentUnit (issue 26 point 3): the cache itself, driven
// directly: cached reads and refetches of one client from 8 goroutines
// while the clock moves. The code before this test read an entry's fetch
// time unlocked while a refetch wrote it (-race: assertion.go:260 against
// :297).
func TestKeysConcurrentUnit(t *testing.T) {
	k := assertiontest.NewKey(t, "one", jwa.ES256())
	p := newPartnerKeys(t, assertiontest.JWKS(t, k))
	e := newEnv(t)
	id := e.keyedClient(clients.ClientKeySource{URL: p.url, AllowHTTP: true})
	ak, err := newAssertionKeys(e.store, e.now.Now, JWKSPolicy{AllowHTTP: true, AllowPrivate: true}, e.srv.log, noMetrics{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				want := keysCached
				if (g+i)%2 == 0 {
					want = keysRefetch
				}
				en, err := ak.get(ctx, id, want)
				if err != nil || en.keys.Set == nil || en.keys.Set.Len() != 1 {
					t.Errorf("get: %+v %v", en, err)
					return
				}
				if g == 0 && i%5 == 0 {
					e.now.Add(jwksRefetchEvery)
				}
			}
		})
	}
	wg.Wait()
	// The first load and the first refetch may overlap (each runs once
	// for all its callers); then at most one refetch per move.
	if n := p.fetches.Load(); n < 1 || n > 12 {
		t.Fatalf("%d fetches, want at most two at first and one per %v the clock moved (10)", n, jwksRefetchEvery)
	}
}

// TestKeysLoadDetached (issue 26 point 3): a load shared by several
// requests runs on a context of its own: the first caller giving up fails
// neither the load nor the others waiting for it.
func TestKeysLoadDetached(t *testing.T) {
	k := assertiontest.NewKey(t, "one", jwa.ES256())
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	var fetches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		arrived <- struct{}{}
		<-release
		_, _ = w.Write(assertiontest.JWKS(t, k))
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t)
	id := e.keyedClient(clients.ClientKeySource{URL: srv.URL + "/jwks.json", AllowHTTP: true})
	ak, err := newAssertionKeys(e.store, e.now.Now, JWKSPolicy{AllowHTTP: true, AllowPrivate: true}, e.srv.log, noMetrics{})
	if err != nil {
		t.Fatal(err)
	}
	first, cancel := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() { _, err := ak.get(first, id, keysCached); firstErr <- err }()
	<-arrived
	second := make(chan *keysEntry, 1)
	waiting := &doneAsked{Context: context.Background(), asked: make(chan struct{})}
	go func() {
		e, err := ak.get(waiting, id, keysCached)
		if err != nil {
			t.Errorf("the second caller: %v", err)
		}
		second <- e
	}()
	select { // the second caller joins the load
	case <-waiting.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the second caller never waited for the load")
	}
	cancel()
	if err := <-firstErr; err != context.Canceled {
		t.Fatalf("the caller that gave up: %v", err)
	}
	close(release)
	got := <-second
	if got == nil || got.failed || got.keys.Set == nil || got.keys.Set.Len() != 1 {
		t.Fatalf("the second caller got %+v", got)
	}
	if n := fetches.Load(); n != 1 {
		t.Fatalf("%d fetches, want 1 (shared)", n)
	}
}

// doneAsked is a context that says when its Done is first asked for: get
// asks for it only once it joined a load, to wait for the load or the end
// of its caller's context.
type doneAsked struct {
	context.Context
	asked chan struct{}
	once  sync.Once
}

func (c *doneAsked) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}
