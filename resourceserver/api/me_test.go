package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

func TestMe(t *testing.T) {
	f := newFixture(t)
	s := f.server()
	hospital := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital, clients.AllScopes...)
	pharma := f.client("acme-pharma", clients.EnvironmentLive, clients.AudiencePharma)
	exp := f.clock.Now().Add(accesstoken.Lifetime).UTC().Format(time.RFC3339)

	tests := []struct {
		name   string
		client clients.Client
		scope  string
		want   map[string]any
	}{
		{
			name: "all scopes", client: hospital, scope: "programme.metrics.read events.subscribe patients.read referrals.write",
			want: map[string]any{
				"api_version": "1", "client_id": hospital.ID, "name": "Client of st-marys", "audience": "hospital",
				"organization":     map[string]any{"name": "Org st-marys", "slug": "st-marys"},
				"environment":      "live",
				"scopes":           []any{"programme.metrics.read", "events.subscribe", "patients.read", "referrals.write"},
				"token_expires_at": exp, "rate_limit_per_minute": float64(120),
			},
		},
		{
			name: "narrowed scope", client: hospital, scope: "patients.read",
			want: map[string]any{
				"api_version": "1", "client_id": hospital.ID, "name": "Client of st-marys", "audience": "hospital",
				"organization": map[string]any{"name": "Org st-marys", "slug": "st-marys"},
				"environment":  "live", "scopes": []any{"patients.read"},
				"token_expires_at": exp, "rate_limit_per_minute": float64(120),
			},
		},
		{
			name: "no scopes is an empty array", client: pharma, scope: "",
			want: map[string]any{
				"api_version": "1", "client_id": pharma.ID, "name": "Client of acme-pharma", "audience": "pharma",
				"organization": map[string]any{"name": "Org acme-pharma", "slug": "acme-pharma"},
				"environment":  "live", "scopes": []any{},
				"token_expires_at": exp, "rate_limit_per_minute": float64(120),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
			req.Header.Set("Authorization", "Bearer "+f.token(tt.client, tt.scope))
			rec := serve(s.handler, req)
			wantJSON(t, rec, http.StatusOK, tt.want)
			wantHeader(t, rec, map[string]string{
				"Cache-Control":    "no-store",
				"RateLimit-Limit":  "120",
				"RateLimit-Reset":  "60",
				"WWW-Authenticate": "",
			})
			if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(rec.Header().Get("X-Request-Id")) {
				t.Errorf("X-Request-Id %q", rec.Header().Get("X-Request-Id"))
			}
			f.validate(req, rec)
		})
	}
	// The remaining count runs down over the client's requests, whichever
	// token they use: 2 hospital requests so far.
	rec := doGet(t, s.handler, "/api/v1/me/", f.token(hospital, ""))
	wantHeader(t, rec, map[string]string{"RateLimit-Remaining": "117"})
}

// The "scopes" key holds exactly the JSON array, even with no scopes: compare
// bytes, not just decoded values.
func TestMeBodyBytes(t *testing.T) {
	f := newFixture(t)
	c := f.client("acme-pharma", clients.EnvironmentLive, clients.AudiencePharma)
	rec := doGet(t, f.server().handler, "/api/v1/me/", f.token(c, ""))
	want := `{"api_version":"1","client_id":"` + c.ID + `","name":"Client of acme-pharma","audience":"pharma",` +
		`"organization":{"name":"Org acme-pharma","slug":"acme-pharma"},"environment":"live","scopes":[],` +
		`"token_expires_at":"` + f.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `","rate_limit_per_minute":120}`
	if rec.Body.String() != want {
		t.Errorf("body\n got %s\nwant %s", rec.Body, want)
	}
}

func TestMeSandbox(t *testing.T) {
	f := newFixture(t)
	_, seeded, err := f.store.SeedSandbox(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := f.server()
	for _, sc := range seeded {
		t.Run(sc.Client.Audience, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/api/v1/me/", nil)
			req.Header.Set("Authorization", "Bearer "+f.token(sc.Client, "events.subscribe"))
			rec := serve(s.handler, req)
			got := decode(t, rec)
			if rec.Code != http.StatusOK || got["environment"] != "sandbox" {
				t.Fatalf("%d %v", rec.Code, got)
			}
			wantOrg := map[string]any{"name": clients.SandboxOrgName, "slug": clients.SandboxOrgSlug}
			if org, _ := got["organization"].(map[string]any); org["name"] != wantOrg["name"] || org["slug"] != wantOrg["slug"] {
				t.Errorf("organization %v, want %v", got["organization"], wantOrg)
			}
			if got["audience"] != sc.Client.Audience || got["client_id"] != sc.Client.ID {
				t.Errorf("got %v", got)
			}
			f.validate(req, rec)
		})
	}
}

// Tokens signed with ES256 keys verify as well as EdDSA ones.
func TestMeES256(t *testing.T) {
	f := newFixture(t)
	key, err := accesstoken.GenerateKey(accesstoken.AlgES256)
	if err != nil {
		t.Fatal(err)
	}
	if f.keys, err = accesstoken.NewKeySet(key); err != nil {
		t.Fatal(err)
	}
	if f.issuer, err = accesstoken.NewIssuer(f.keys, testIssuer, testAudience); err != nil {
		t.Fatal(err)
	}
	c := f.client("acme-pharma", clients.EnvironmentLive, clients.AudiencePharma)
	if rec := doGet(t, f.server().handler, "/api/v1/me/", f.token(c, "")); rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

// HEAD is answered like GET, without a body, and counts as a request.
func TestMeHead(t *testing.T) {
	f := newFixture(t)
	c := f.client("acme-pharma", clients.EnvironmentLive, clients.AudiencePharma)
	srv := httptest.NewServer(f.server().handler)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodHead, srv.URL+"/api/v1/me/", nil)
	req.Header.Set("Authorization", "Bearer "+f.token(c, ""))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) != 0 || resp.Header.Get("RateLimit-Remaining") != "119" {
		t.Errorf("%d, %d bytes, %v", resp.StatusCode, len(body), resp.Header)
	}
}

// roundTrips counts the commands and pipelines sent to Redis.
type roundTrips struct{ n atomic.Int64 }

func (*roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// One Redis round trip per API request (clients.Store.AdmitAPI), whatever
// the answer.
func TestOneRoundTripPerRequest(t *testing.T) {
	f := newFixture(t)
	s := f.server()
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital)
	tok := f.token(c, "")
	doGet(t, s.handler, "/api/v1/me/", tok) // loads the script (EVALSHA, then EVAL once)
	rt := &roundTrips{}
	f.rdb.AddHook(rt)

	for i, want := range []int{200, 200} {
		before := rt.n.Load()
		if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != want {
			t.Fatalf("request %d: %d", i, rec.Code)
		}
		if n := rt.n.Load() - before; n != 1 {
			t.Errorf("request %d: %d Redis round trips, want 1", i, n)
		}
	}
	if _, err := f.store.SetRateLimit(context.Background(), c.ID, 3); err != nil {
		t.Fatal(err)
	}
	before := rt.n.Load()
	if rec := doGet(t, s.handler, "/api/v1/me/", tok); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("%d", rec.Code)
	}
	if n := rt.n.Load() - before; n != 1 {
		t.Errorf("429: %d Redis round trips, want 1", n)
	}
}
