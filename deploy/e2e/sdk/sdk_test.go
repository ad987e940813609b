package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/logtest"
	"github.com/partnerapi/authplatform/pkg/partnerclient"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testclock"
)

// TestRenewal: the token is fetched once and reused until RenewBefore
// before its expiry, on the SDK's injected clock; then renewed once.
func TestRenewal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		renewBefore time.Duration
		want        time.Duration // age at which the token is renewed
	}{
		{"default 60s", 0, 3540 * time.Second},
		{"10 minutes", 10 * time.Minute, 3000 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStack(t)
			id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
			clk := testclock.New(time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC))
			start := clk.Now()
			cfg := s.config(id, secret, &sleeper{})
			cfg.Now, cfg.RenewBefore = clk.Now, tc.renewBefore
			c, err := partnerclient.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			me, err := c.Me(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if me.ClientID != id || me.Organization.Slug != "acme" || !slices.Equal(me.Scopes, []string{clients.ScopeEventsSubscribe}) {
				t.Fatalf("me = %+v", me)
			}
			first, err := c.TokenSource().TokenContext(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !first.Expiry.Equal(start.Add(time.Hour)) || !strings.HasPrefix(first.AccessToken, "svc_at_") || first.Extra("scope") != clients.ScopeEventsSubscribe {
				t.Fatalf("token expiry %v (want %v), scope %v", first.Expiry, start.Add(time.Hour), first.Extra("scope"))
			}
			clk.Set(start.Add(tc.want - time.Second))
			if _, err := c.Me(ctx); err != nil {
				t.Fatal(err)
			}
			if n := s.tokens.Load(); n != 1 {
				t.Fatalf("%d token requests one second before renewal, want 1", n)
			}
			clk.Set(start.Add(tc.want))
			if _, err := c.Me(ctx); err != nil {
				t.Fatal(err)
			}
			second, _ := c.TokenSource().TokenContext(ctx)
			if n := s.tokens.Load(); n != 2 || second.AccessToken == first.AccessToken {
				t.Fatalf("%d token requests at renewal (want 2), token renewed: %v", n, second.AccessToken != first.AccessToken)
			}
			if n := s.api.Load(); n != 3 {
				t.Fatalf("%d API requests, want 3", n)
			}
		})
	}
}

// TestConcurrentCallersShareOneFetch: many goroutines asking at once, for a
// token or through the HTTP client, cause one token request on the wire.
func TestConcurrentCallersShareOneFetch(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	c, err := partnerclient.New(s.config(id, secret, &sleeper{}))
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	var wg sync.WaitGroup
	start := make(chan struct{})
	tokens := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			<-start
			if i%2 == 0 {
				tok, err := c.TokenSource().TokenContext(context.Background())
				if err == nil {
					tokens[i] = tok.AccessToken
				}
				errs[i] = err
				return
			}
			_, errs[i] = c.Me(context.Background())
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if got := s.tokens.Load(); got != 1 {
		t.Fatalf("%d token requests for %d concurrent callers, want 1", got, n)
	}
	for _, tok := range tokens {
		if tok != "" && tok != tokens[0] {
			t.Fatal("callers got different tokens")
		}
	}
	if got := s.api.Load(); got != n/2 {
		t.Fatalf("%d API requests, want %d", got, n/2)
	}
}

// TestRetryOn401: a token the API refuses (expired on the servers' clock)
// is dropped, a fresh one fetched and the request retried once.
func TestRetryOn401(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	c, err := partnerclient.New(s.config(id, secret, &sleeper{}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Me(ctx); err != nil {
		t.Fatal(err)
	}
	// The servers' clock moves past the token's expiry; the SDK's does not,
	// so it sends its cached token and meets a 401.
	s.serverNow.Add(2 * time.Hour)
	if _, err := c.Me(ctx); err != nil {
		t.Fatalf("after expiry on the server: %v", err)
	}
	want := []answer{{tokenPath, 200, ""}, {pathMe, 200, ""}, {pathMe, 401, ""}, {tokenPath, 200, ""}, {pathMe, 200, ""}}
	if got := s.history(); !slices.Equal(got, want) {
		t.Fatalf("answers:\n got %v\nwant %v", got, want)
	}
}

// TestRotationMidFlight: after the operator rotates the secret, the API
// refuses the old token (401), the SDK retries once with a fresh token,
// the token endpoint refuses the old secret, and the caller gets a typed
// invalid_client error, never the secret, and no further retries.
func TestRotationMidFlight(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	id, secret := s.client(clients.AudienceHospital, clients.ScopePatientsRead)
	cfg := s.config(id, secret, &sleeper{})
	var logs logtest.Sink
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := partnerclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Me(ctx); err != nil {
		t.Fatal(err)
	}
	tok, _ := c.TokenSource().TokenContext(ctx)
	_, fresh, err := s.store.RotateSecret(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Me(ctx)
	var te *partnerclient.TokenError
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want a *partnerclient.TokenError", err, err)
	}
	if te.StatusCode != http.StatusUnauthorized || te.Code != "invalid_client" || te.Description != "Client authentication failed" || te.RetryAfter != 0 {
		t.Fatalf("token error %+v", te)
	}
	for _, text := range []string{err.Error(), fmt.Sprintf("%v %+v %#v", c.TokenSource(), te, c.TokenSource())} {
		if strings.Contains(text, secret) || strings.Contains(text, strings.TrimPrefix(secret, "svc_cs_")) {
			t.Fatalf("the secret appears in %q", text)
		}
	}
	want := []answer{{tokenPath, 200, ""}, {pathMe, 200, ""}, {pathMe, 401, ""}, {tokenPath, 401, ""}}
	if got := s.history(); !slices.Equal(got, want) {
		t.Fatalf("answers:\n got %v\nwant %v", got, want)
	}
	// The SDK's logs tell what happened, never the secret or the token.
	if l := logs.String(); !strings.Contains(l, "401, retrying once with a fresh token") || strings.Contains(l, secret) || strings.Contains(l, tok.AccessToken) || strings.Contains(l, "svc_cs_") {
		t.Fatalf("SDK logs:\n%s", l)
	}
	// With the new secret, a new client works.
	c2, err := partnerclient.New(s.config(id, fresh, &sleeper{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Me(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAuthForm: client_secret_post, the option, works as Basic does.
func TestAuthForm(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe, clients.ScopeProgrammeMetricsRead)
	cfg := s.config(id, secret, &sleeper{})
	cfg.AuthStyle, cfg.Scopes = partnerclient.AuthForm, []string{clients.ScopeEventsSubscribe}
	c, err := partnerclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	me, err := c.Me(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(me.Scopes, []string{clients.ScopeEventsSubscribe}) {
		t.Fatalf("scopes %v, want the narrowed one", me.Scopes)
	}
	cfg.ClientSecret = clients.NewSecret()
	wrong, _ := partnerclient.New(cfg)
	_, err = wrong.Me(context.Background())
	var te *partnerclient.TokenError
	if !errors.As(err, &te) || te.Code != "invalid_client" {
		t.Fatalf("wrong secret in the form: %v", err)
	}
}

// TestTokenEndpoint429: slow_down is waited out for the Retry-After the
// server sent, then retried; a Retry-After above MaxWait, or past the
// context's deadline, is returned at once as a typed error.
func TestTokenEndpoint429(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	ctx := context.Background()
	if _, err := s.store.SetTokenRateLimit(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	sl := &sleeper{rate: s.rate}
	ts, err := partnerclient.NewTokenSource(s.config(id, secret, sl))
	if err != nil {
		t.Fatal(err)
	}
	first, err := ts.TokenContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.rate.Add(20 * time.Second)
	ts.Invalidate(first.AccessToken)
	second, err := ts.TokenContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := s.history()
	if len(h) != 3 || h[1].Status != 429 || h[2].Status != 200 {
		t.Fatalf("answers %v, want 200, 429, 200", h)
	}
	// The first request counts until it is a minute old: 40 s from now;
	// the retry after that wait was admitted.
	ra, _ := strconv.Atoi(h[1].RetryAfter)
	if ra != 40 || !slices.Equal(sl.Waits(), []time.Duration{40 * time.Second}) || second.AccessToken == first.AccessToken {
		t.Fatalf("Retry-After %q, waits %v, want one wait of 40s", h[1].RetryAfter, sl.Waits())
	}

	// MaxWait below the server's Retry-After: no wait, a typed error.
	cfg := s.config(id, secret, sl)
	cfg.MaxWait = 30 * time.Second
	impatient, err := partnerclient.NewTokenSource(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = impatient.TokenContext(ctx)
	var te *partnerclient.TokenError
	if !errors.As(err, &te) || te.StatusCode != 429 || te.Code != "slow_down" || te.RetryAfter != 60*time.Second {
		t.Fatalf("error %v, want slow_down with Retry-After 60s", err)
	}
	// A context that ends before Retry-After: no wait either.
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	bounded, _ := partnerclient.NewTokenSource(s.config(id, secret, sl))
	if _, err := bounded.TokenContext(dctx); !errors.As(err, &te) || te.Code != "slow_down" {
		t.Fatalf("error %v, want slow_down; answers %v, waits %v", err, s.history(), sl.Waits())
	}
	if len(sl.Waits()) != 1 {
		t.Fatalf("waits %v: waited although Retry-After exceeded MaxWait or the deadline", sl.Waits())
	}
}

// TestAPI429: the API's 429 is waited out for its Retry-After (60 s, here
// counted from a refusal at the same instant as the request that filled the
// window, the closest case) and the retry, exactly 60 s later, is admitted;
// above MaxWait it comes back as an *APIError with its detail.
func TestAPI429(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	ctx := context.Background()
	if _, err := s.store.SetRateLimit(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	sl := &sleeper{rate: s.rate}
	c, err := partnerclient.New(s.config(id, secret, sl))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.Me(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []answer{{tokenPath, 200, ""}, {pathMe, 200, ""}, {pathMe, 429, "60"}, {pathMe, 200, ""}}
	if got := s.history(); !slices.Equal(got, want) || !slices.Equal(sl.Waits(), []time.Duration{60 * time.Second}) {
		t.Fatalf("answers %v (want %v), waits %v (want [1m0s])", got, want, sl.Waits())
	}

	cfg := s.config(id, secret, sl)
	cfg.MaxWait = 59 * time.Second
	impatient, err := partnerclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = impatient.Me(ctx)
	var ae *partnerclient.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 429 || ae.Detail != "rate limit exceeded; retry after the time in Retry-After" || ae.RetryAfter != 60*time.Second {
		t.Fatalf("error %v, want the API's 429", err)
	}
	if len(sl.Waits()) != 1 {
		t.Fatalf("waits %v: waited past MaxWait", sl.Waits())
	}
}

// TestRedisDown: with Redis killed, the API's 503 and the token endpoint's
// temporarily_unavailable are retried MaxRetries times, waiting their
// Retry-After, then surfaced as typed errors.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond, DialerRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	s := newStack(t, onRedis(rdb))
	id, secret := s.client(clients.AudiencePharma, clients.ScopeEventsSubscribe)
	sl := &sleeper{}
	c, err := partnerclient.New(s.config(id, secret, sl))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Me(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Kill()

	_, err = c.Me(ctx)
	var ae *partnerclient.APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 || ae.Detail != "service temporarily unavailable" || ae.RetryAfter != 5*time.Second {
		t.Fatalf("error %v, want the API's 503", err)
	}
	five := []time.Duration{5 * time.Second, 5 * time.Second, 5 * time.Second}
	if got := s.api.Load(); got != 1+1+partnerclient.DefaultMaxRetries || !slices.Equal(sl.Waits(), five) {
		t.Fatalf("%d API requests (want %d), waits %v (want %v)", got, 2+partnerclient.DefaultMaxRetries, sl.Waits(), five)
	}

	sl2 := &sleeper{}
	ts, err := partnerclient.NewTokenSource(s.config(id, secret, sl2))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ts.TokenContext(ctx)
	var te *partnerclient.TokenError
	if !errors.As(err, &te) || te.StatusCode != 503 || te.Code != "temporarily_unavailable" || te.RetryAfter != 5*time.Second {
		t.Fatalf("error %v, want temporarily_unavailable", err)
	}
	if got := s.tokens.Load(); got != 1+1+partnerclient.DefaultMaxRetries || !slices.Equal(sl2.Waits(), five) {
		t.Fatalf("%d token requests (want %d), waits %v", got, 2+partnerclient.DefaultMaxRetries, sl2.Waits())
	}
}
