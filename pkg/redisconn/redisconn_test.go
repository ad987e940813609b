package redisconn_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestMain: the Cluster tests mostly wait on their redis-server processes
// (a node turns writable 2 s after it starts; a slot is held moving for the
// command budget), so more of them run at once than go test's default
// (redistest.RunMain).
func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

func open(t *testing.T, url string) redis.UniversalClient {
	t.Helper()
	rdb, err := redisconn.Open(url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestOpenSingleNode(t *testing.T) {
	for _, tc := range []struct {
		url      string
		addr     string
		db       int
		user     string
		password string
		tls      bool
		read     time.Duration
	}{
		{"", "127.0.0.1:6379", 0, "", "", false, time.Second},
		{"redis://localhost:6380/2", "localhost:6380", 2, "", "", false, time.Second},
		{"redis://cache.internal", "cache.internal:6379", 0, "", "", false, time.Second},
		{"redis://app:s3cret@cache:6379/1", "cache:6379", 1, "app", "s3cret", false, time.Second},
		{"redis://:s3cret@cache:6379", "cache:6379", 0, "", "s3cret", false, time.Second},
		{"rediss://app:s3cret@cache.example.com:6380/0", "cache.example.com:6380", 0, "app", "s3cret", true, time.Second},
		{"redis://cache:6379/0?read_timeout=5s", "cache:6379", 0, "", "", false, 5 * time.Second},
	} {
		t.Run(tc.url, func(t *testing.T) {
			c, ok := open(t, tc.url).(*redis.Client)
			if !ok {
				t.Fatalf("Open(%q) is not a *redis.Client", tc.url)
			}
			o := c.Options()
			if o.Addr != tc.addr || o.DB != tc.db || o.Username != tc.user || o.Password != tc.password {
				t.Errorf("options = addr %s db %d user %q password %q; want %s %d %q %q",
					o.Addr, o.DB, o.Username, o.Password, tc.addr, tc.db, tc.user, tc.password)
			}
			if (o.TLSConfig != nil) != tc.tls {
				t.Errorf("TLS = %v, want %v", o.TLSConfig != nil, tc.tls)
			}
			if tc.tls && o.TLSConfig.ServerName != "cache.example.com" {
				t.Errorf("TLS server name = %q", o.TLSConfig.ServerName)
			}
			// Fail fast on a dead Redis unless the URL says otherwise.
			if o.ReadTimeout != tc.read || o.WriteTimeout != time.Second {
				t.Errorf("timeouts = read %v write %v; want read %v write 1s", o.ReadTimeout, o.WriteTimeout, tc.read)
			}
			if !o.ContextTimeoutEnabled {
				t.Error("ContextTimeoutEnabled is off: the command budget cannot end a read")
			}
		})
	}
}

func TestOpenSentinel(t *testing.T) {
	for _, url := range []string{
		"redis://sentinel-1:26379?master_name=mymaster",
		"redis://sentinel-1:26379/0?master_name=mymaster&addr=sentinel-2:26379&addr=sentinel-3:26379",
		"rediss://user:pw@sentinel-1:26379?master_name=mymaster&password=masterpw",
	} {
		t.Run(url, func(t *testing.T) {
			c, ok := open(t, url).(*redis.Client)
			if !ok {
				t.Fatalf("Open(%q) is not a failover *redis.Client", url)
			}
			if o := c.Options(); o.Addr != "FailoverClient" || o.ReadTimeout != time.Second || o.WriteTimeout != time.Second {
				t.Errorf("options = addr %q read %v write %v; want a failover client with 1s timeouts", o.Addr, o.ReadTimeout, o.WriteTimeout)
			}
			if !c.Options().ContextTimeoutEnabled {
				t.Error("ContextTimeoutEnabled is off: the command budget cannot end a read")
			}
		})
	}
}

func TestOpenCluster(t *testing.T) {
	for _, tc := range []struct {
		url   string
		addrs []string
		tls   bool
	}{
		{"redis+cluster://node-1:7000", []string{"node-1:7000"}, false},
		{"redis+cluster://node-1:7000?addr=node-2:7001&addr=node-3:7002", []string{"node-1:7000", "node-2:7001", "node-3:7002"}, false},
		{"rediss+cluster://u:p@node-1:7000?addr=node-2:7001", []string{"node-1:7000", "node-2:7001"}, true},
		{"redis://node-1:7000?addr=node-2:7001", []string{"node-1:7000", "node-2:7001"}, false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			c, ok := open(t, tc.url).(*redis.ClusterClient)
			if !ok {
				t.Fatalf("Open(%q) is not a *redis.ClusterClient", tc.url)
			}
			o := c.Options()
			if !slices.Equal(o.Addrs, tc.addrs) {
				t.Errorf("addrs = %v, want %v", o.Addrs, tc.addrs)
			}
			if (o.TLSConfig != nil) != tc.tls {
				t.Errorf("TLS = %v, want %v", o.TLSConfig != nil, tc.tls)
			}
			if o.ReadTimeout != time.Second || o.WriteTimeout != time.Second {
				t.Errorf("timeouts = %v/%v, want 1s", o.ReadTimeout, o.WriteTimeout)
			}
			if !o.ContextTimeoutEnabled {
				t.Error("ContextTimeoutEnabled is off: the command budget cannot end a read")
			}
		})
	}
}

func TestOpenBadURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string
	}{
		{"redis://user:s3cret@host:notaport/0", "REDIS_URL is not a URL"},
		{"://nothing", "REDIS_URL is not a URL"},
		{"http://host:6379", "invalid URL scheme"},
		{"redis://host:6379/notadb", "invalid database number"},
		{"redis://host:6379/0/1", "invalid URL path"},
		{"redis://host:6379/0?no_such_option=1", "no_such_option"},
		{"redis://host:6379/0?read_timeout=soon", "read_timeout"},
		{"http://host:26379?master_name=m", "sentinel"},
		{"redis://host:26379?master_name=m&addr=:1", "sentinel"},
		{"redis+cluster://host:7000?no_such_option=1", "cluster"},
		{"redis://user:s3cret@host:7000?addr=bad", "cluster"},
		// go-redis panics on these: Open must refuse them.
		{"redis://host:26379?master_name=m&route_randomly=true", "sentinel"},
		{"redis://host:26379?master_name=m&route_by_latency=true", "sentinel"},
		{"redis://host:26379?master_name=m&pool_size=-1", "sentinel"},
		{"redis://user:s3cret@host:6379/0?pool_size=-1", "REDIS_URL"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			var rdb redis.UniversalClient
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = errors.New("panic")
						t.Errorf("Open(%q) panicked: %v", tc.url, r)
					}
				}()
				rdb, err = redisconn.Open(tc.url)
			}()
			if err == nil {
				_ = rdb.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tc.url)
			}
			if rdb != nil {
				t.Errorf("Open returned a client with the error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%q) = %q, want it to mention %q", tc.url, err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error reveals the password: %q", err)
			}
		})
	}
}

func TestPing(t *testing.T) {
	rdb := redistest.Client(t)
	if err := redisconn.Ping(t.Context(), rdb, 2*time.Second); err != nil {
		t.Fatalf("Ping(test Redis): %v", err)
	}
	dead := open(t, "redis://127.0.0.1:1/0?max_retries=-1")
	start := time.Now()
	// A refusal is answered as it is, not tried again into a timeout.
	if err := redisconn.Ping(t.Context(), dead, 200*time.Millisecond); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("Ping of a closed port = %v, want connection refused", err)
	}
	redistest.AtMost(t, "Ping of a closed port", time.Since(start), 5*time.Second)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := redisconn.Ping(ctx, rdb, time.Second); err == nil {
		t.Error("Ping with a cancelled context succeeded")
	}
}
