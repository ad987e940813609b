package main

import (
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

func TestStartEmbedded(t *testing.T) {
	e, err := startEmbedded()
	if err != nil {
		t.Fatalf("startEmbedded: %v", err)
	}
	defer e.close()
	if !strings.HasPrefix(e.url(), "redis://127.0.0.1:") {
		t.Errorf("URL = %q, want a loopback redis:// URL", e.url())
	}
	rdb, err := redisconn.Open(e.url())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := redisconn.Ping(t.Context(), rdb, time.Second); err != nil {
		t.Fatalf("Ping(embedded): %v", err)
	}
	if err := rdb.Set(t.Context(), "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.Get(t.Context(), "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v", got, err)
	}
	// Scripts and the server clock work, as the registry needs them.
	if n, err := rdb.Eval(t.Context(), "return redis.call('TIME')[1] + 0", nil).Int64(); err != nil || n < time.Now().Unix()-60 {
		t.Fatalf("EVAL TIME = %d, %v", n, err)
	}
	// TTLs run on the wall clock (miniredis only expires keys on its own
	// clock when told to), so idle rate-limit logs of a long-running local
	// stack go away. This waits for a 1 ms TTL to lapse, not for a duration.
	if ttl := rdb.PTTL(t.Context(), "k").Val(); ttl <= 0 || ttl > time.Minute {
		t.Errorf("PTTL = %v", ttl)
	}
	if err := rdb.Set(t.Context(), "short", "v", time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, "a key with a 1 ms TTL lapses (TTLs follow the wall clock)", func() bool {
		return rdb.Exists(t.Context(), "short").Val() == 0
	})
	e2, err := startEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	if e2.url() == e.url() {
		t.Error("two embedded servers share a URL")
	}
	e2.close()
	e.close()
	if err := redisconn.Ping(t.Context(), rdb, 200*time.Millisecond); err == nil {
		t.Error("Ping succeeded after Close")
	}
}
