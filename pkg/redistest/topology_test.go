package redistest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redisconn"
)

func TestMain(m *testing.M) { os.Exit(RunMain(m)) }

// TestTopologies starts the shared Cluster and Sentinel group and writes
// and reads a key through the URL each gives, as the servers would.
func TestTopologies(t *testing.T) {
	for _, top := range Topologies(t) {
		t.Run(top.Name(), func(t *testing.T) {
			rdb, err := redisconn.Open(top.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer rdb.Close()
			ctx := context.Background()
			key := Prefix(t, rdb) + "{k}:v"
			if err := rdb.Set(ctx, key, "x", time.Minute).Err(); err != nil {
				t.Fatalf("SET through %s: %v", top.URL(), err)
			}
			if got := rdb.Get(ctx, key).Val(); got != "x" {
				t.Fatalf("GET = %q", got)
			}
			p := top.PrimaryFor(t, key)
			if reps := top.ReplicasOf(t, p); len(reps) != 1 {
				t.Fatalf("primary %s has %d replicas, want 1", p.Addr(), len(reps))
			}
		})
	}
}
