package tokenserver

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// benchPost sends one POST and drains the answer, failing on any status
// but 200.
func benchPost(b *testing.B, c *http.Client, target, body, id, secret string) {
	req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", formType)
	basic(id, secret)(req)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("status %d", resp.StatusCode)
	}
}

// BenchmarkTokenEndpoint: one token request end to end over httptest
// (parse, digest check, admission and rate log in Redis, EdDSA signature).
func BenchmarkTokenEndpoint(b *testing.B) {
	e := newEnv(b, withRedisClock())
	id, secret := e.client(clients.AudienceHospital, clients.AllScopes...)
	if _, err := e.store.SetTokenRateLimit(context.Background(), id, clients.MaxRateLimitPerMinute); err != nil {
		b.Fatal(err)
	}
	c := &http.Client{}
	body := grant()
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, c, e.url+PathToken, body, id, secret)
	}
}

// BenchmarkIntrospect: one introspection of a live token end to end.
func BenchmarkIntrospect(b *testing.B) {
	e := newEnv(b, withRedisClock())
	id, secret := e.client(clients.AudienceHospital, clients.AllScopes...)
	body := form("token", e.token(b, e.url, id, secret, ""))
	c := &http.Client{}
	b.ReportAllocs()
	for b.Loop() {
		benchPost(b, c, e.url+PathIntrospect, body, id, secret)
	}
}
