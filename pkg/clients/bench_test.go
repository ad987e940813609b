package clients_test

import (
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// benchClient creates, on the real test Redis, a client whose limits are so
// high that no benchmark iteration is refused.
func benchClient(b *testing.B) (*clients.Store, clients.Client, string) {
	b.Helper()
	rdb := redistest.Client(b)
	store := clients.NewStore(rdb, redistest.Prefix(b, rdb), nil)
	ctx := b.Context()
	if _, err := store.CreateOrg(ctx, clients.OrgSpec{Slug: "bench", Name: "Bench", Environment: clients.EnvironmentLive}); err != nil {
		b.Fatal(err)
	}
	c, secret, err := store.CreateClient(ctx, clients.ClientSpec{OrgSlug: "bench", Name: "bench", Audience: clients.AudienceHospital,
		Scopes: clients.AllScopes, RateLimitPerMinute: clients.MaxRateLimitPerMinute})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.SetTokenRateLimit(ctx, c.ID, clients.MaxRateLimitPerMinute); err != nil {
		b.Fatal(err)
	}
	return store, c, secret
}

func BenchmarkAdmitAPI(b *testing.B) {
	store, c, _ := benchClient(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		a, err := store.AdmitAPI(ctx, tokenRef(c.ID, 1), nil)
		if err != nil || a.Outcome != clients.Admitted {
			b.Fatalf("AdmitAPI = %+v, %v", a, err)
		}
	}
}

func BenchmarkAuthenticateToken(b *testing.B) {
	store, c, secret := benchClient(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		a, err := store.Authenticate(ctx, clients.Attempt{ClientID: c.ID, Secret: secret, Address: "192.0.2.1", FailureLimit: 60, Token: true})
		if err != nil || a.Outcome != clients.Authenticated {
			b.Fatalf("Authenticate = %+v, %v", a, err)
		}
	}
}

// BenchmarkAuthenticateBesideStale is the right secret sent from an address
// where a stale instance of the same client sends its rotated-out secret:
// the failure log and a tag exist, so the script also reads the tag.
func BenchmarkAuthenticateBesideStale(b *testing.B) {
	store, c, secret := benchClient(b)
	ctx := b.Context()
	stale := clients.Attempt{ClientID: c.ID, Secret: clients.NewSecret(), Address: "192.0.2.1", FailureLimit: 60, Token: true}
	if a, err := store.Authenticate(ctx, stale); err != nil || a.Outcome != clients.BadCredentials {
		b.Fatalf("stale secret = %+v, %v", a, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		a, err := store.Authenticate(ctx, clients.Attempt{ClientID: c.ID, Secret: secret, Address: "192.0.2.1", FailureLimit: 60, Token: true})
		if err != nil || a.Outcome != clients.Authenticated {
			b.Fatalf("Authenticate = %+v, %v", a, err)
		}
	}
}

// BenchmarkAdmitAPIPipelined is BenchmarkAdmitAPI from 64 goroutines at
// once through the automatic pipeliner, as a loaded server sends them.
func BenchmarkAdmitAPIPipelined(b *testing.B) {
	store, c, _ := benchClient(b)
	if err := store.UseAutoPipeline(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Close() })
	ctx := b.Context()
	b.ReportAllocs()
	b.SetParallelism(32)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a, err := store.AdmitAPI(ctx, tokenRef(c.ID, 1), nil)
			if err != nil || a.Outcome != clients.Admitted {
				b.Errorf("AdmitAPI = %+v, %v", a, err)
				return
			}
		}
	})
}
