package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// benchServer is a server on real Redis with one client whose limit is out
// of the way, and a token of it. Logs are written (JSON, info level) and
// discarded, as in production minus the I/O.
func benchServer(b *testing.B) (*fixture, *server, string) {
	b.Helper()
	f := newFixture(b)
	cfg := f.config()
	cfg.RateNow = nil // the Redis server's clock, as in production
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	s := f.newServer(logger, cfg, f.deps())
	c := f.client("st-marys", clients.EnvironmentLive, clients.AudienceHospital, clients.AllScopes...)
	if _, err := f.store.SetRateLimit(context.Background(), c.ID, clients.MaxRateLimitPerMinute); err != nil {
		b.Fatal(err)
	}
	return f, s, f.token(c, "patients.read events.subscribe")
}

// BenchmarkAuthenticate is the authentication middleware alone, in process:
// header parsing, the cached signature, the time check and the one Redis
// round trip (AdmitAPI).
func BenchmarkAuthenticate(b *testing.B) {
	_, s, tok := benchServer(b)
	s.authenticated.GET("/bench/", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	req := httptest.NewRequest(http.MethodGet, "/api/v1/bench/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		s.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusNoContent {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkMe is GET /api/v1/me/ end to end over HTTP (httptest server,
// keep-alive client), real Redis.
func BenchmarkMe(b *testing.B) {
	_, s, tok := benchServer(b)
	srv := httptest.NewServer(s.handler)
	defer srv.Close()
	client := srv.Client()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/me/", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%d", resp.StatusCode)
		}
	}
}

// BenchmarkMeParallel is BenchmarkMe from GOMAXPROCS concurrent clients.
func BenchmarkMeParallel(b *testing.B) {
	_, s, tok := benchServer(b)
	srv := httptest.NewServer(s.handler)
	defer srv.Close()
	tr := srv.Client().Transport.(*http.Transport)
	tr.MaxIdleConnsPerHost = 64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/me/", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		for pb.Next() {
			resp, err := srv.Client().Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("%d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkVerify compares a token's verification from the cache with a
// full signature check.
func BenchmarkVerify(b *testing.B) {
	f, s, tok := benchServer(b)
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.tokens.Verify(tok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("uncached", func(b *testing.B) {
		v := accesstoken.NewVerifier(accesstoken.StaticKeys{Set: f.keys.Public()}, testIssuer, testAudience, f.clock.Now)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := v.Verify(tok); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMeBody is GET /api/v1/me/'s body written by hand
// (clientDescription.appendJSON, into a buffer as writeJSONText's pooled
// one) and, for comparison, by encoding/json's encoder without HTML
// escaping (what writeJSON would write).
func BenchmarkMeBody(b *testing.B) {
	d := clientDescription{
		APIVersion: APIVersion, ClientID: "svc_c_0123456789abcdef0123456789", Name: "Harness client 17", Audience: "partner",
		Organization: organization{Name: "Bench Org", Slug: "bench-org"}, Environment: "sandbox",
		Scopes:         []string{"patients:read", "referrals:write", "programmes:metrics:read"},
		TokenExpiresAt: "2026-11-29T22:00:00Z", RateLimitPerMinute: 600,
	}
	b.Run("appendJSON", func(b *testing.B) {
		buf := make([]byte, 0, 1<<10) // as httpserver.JSONFormat's pooled buffer
		b.ReportAllocs()
		for b.Loop() {
			buf = d.appendJSON(buf[:0])
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := enc.Encode(d); err != nil {
				b.Fatal(err)
			}
		}
	})
}
