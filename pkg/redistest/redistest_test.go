package redistest_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

func TestBackends(t *testing.T) {
	bs := redistest.Backends(t)
	if len(bs) != 2 || bs[0].Name != "redis" || bs[1].Name != "miniredis" {
		t.Fatalf("Backends = %+v, want redis and miniredis", bs)
	}
	for _, b := range bs {
		if err := b.Client.Ping(t.Context()).Err(); err != nil {
			t.Errorf("%s: PING: %v", b.Name, err)
		}
	}
}

// TestPrefixCleanup: every key under a test's prefix is gone when the test
// ends, and nothing else is touched.
func TestPrefixCleanup(t *testing.T) {
	for _, b := range redistest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			outside := redistest.Prefix(t, b.Client) + "outside"
			if err := b.Client.Set(t.Context(), outside, "keep", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			var prefix string
			var other string
			t.Run("inner", func(t *testing.T) {
				prefix = redistest.Prefix(t, b.Client)
				other = redistest.Prefix(t, b.Client)
				if prefix == other || !strings.HasPrefix(prefix, "test:") || !strings.HasSuffix(prefix, ":") {
					t.Fatalf("prefixes %q and %q: want distinct test:...: prefixes", prefix, other)
				}
				for i := range 1500 { // more than one SCAN batch
					if err := b.Client.Set(t.Context(), prefix+"{x}:"+strconv.Itoa(i), "v", 0).Err(); err != nil {
						t.Fatal(err)
					}
				}
				if err := b.Client.ZAdd(t.Context(), prefix+"{svc_x}:rl", redis.Z{Score: 1, Member: "m"}).Err(); err != nil {
					t.Fatal(err)
				}
			})
			n := 0
			iter := b.Client.Scan(t.Context(), 0, prefix+"*", 1000).Iterator()
			for iter.Next(t.Context()) {
				n++
			}
			if err := iter.Err(); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Fatalf("%d keys left under %s after the test ended", n, prefix)
			}
			if v, err := b.Client.Get(t.Context(), outside).Result(); err != nil || v != "keep" {
				t.Fatalf("a key outside the prefix was touched: %q, %v", v, err)
			}
		})
	}
}

func TestStartServer(t *testing.T) {
	s := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rdb.Close()
	if err := rdb.Set(t.Context(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on the test's own server: %v", err)
	}
	if s.URL() != "redis://"+s.Addr()+"/0" {
		t.Errorf("URL = %q", s.URL())
	}
	s.Kill()
	if err := rdb.Ping(t.Context()).Err(); err == nil {
		t.Fatal("PING succeeded after Kill")
	}
	s.Start()
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}
}
