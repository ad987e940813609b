package redisconn_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestConfirmedWritePlannedFailover: a confirmed write whose slot's
// primary was just replaced by a planned CLUSTER FAILOVER (the client's
// slot map still names the old primary, which answers MOVED) is tried
// again on the new primary and made once, with no error for the operator.
func TestConfirmedWritePlannedFailover(t *testing.T) {
	redistest.Long(t)
	cluster := redistest.StartCluster(t)
	rdb := open(t, cluster.URL())
	ctx := t.Context()
	const key = "{svc_plannedfailoverplanned}:client"
	confirm := redisconn.Confirmation{Replicas: 1, Timeout: 2 * time.Second}
	incr := func() (*redis.IntCmd, redisconn.Ack, error) {
		var cmd *redis.IntCmd
		ack, err := redisconn.ConfirmedWrite(ctx, rdb, key, confirm, func(p redis.Pipeliner) { cmd = p.Incr(ctx, key) })
		return cmd, ack, err
	}
	if _, ack, err := incr(); err != nil || !ack.Confirmed(confirm) {
		t.Fatalf("first write: %+v, %v", ack, err)
	}
	primary := cluster.PrimaryFor(t, key)
	replicas := cluster.ReplicasOf(t, primary)
	if len(replicas) == 0 {
		t.Fatal("no replica")
	}
	cluster.PlannedFailover(t, replicas[0], 60*time.Second)
	cmd, ack, err := incr()
	if err != nil {
		t.Fatalf("write after a planned failover: %v", err)
	}
	if cmd.Val() != 2 {
		t.Fatalf("INCR answered %d, want 2 (made once)", cmd.Val())
	}
	t.Logf("after the failover: %+v", ack)
	n, err := rdb.Get(ctx, key).Int()
	if err != nil || n != 2 {
		t.Fatalf("value %d, %v; want 2", n, err)
	}
}

// TestAckDescribe: what an operator reads when replicas do not confirm.
func TestAckDescribe(t *testing.T) {
	c := redisconn.Confirmation{Replicas: 2, Timeout: 2 * time.Second}
	for _, tc := range []struct {
		ack  redisconn.Ack
		want string
	}{
		{redisconn.Ack{Acknowledged: 1, Connected: 1}, "confirmed by 1 of the 2 replica(s) required within 2s; the primary has only 1 replica(s) connected, fewer than required"},
		{redisconn.Ack{Acknowledged: 0, Connected: 2}, "confirmed by 0 of the 2 replica(s) required within 2s; the primary has 2 replica(s) connected"},
		{redisconn.Ack{Acknowledged: 0, Connected: -1}, "how many replicas the primary has could not be read"},
	} {
		if got := tc.ack.Describe(c); !strings.Contains(got, tc.want) {
			t.Errorf("Describe(%+v) = %q, want it to contain %q", tc.ack, got, tc.want)
		}
		if tc.ack.Confirmed(c) {
			t.Errorf("%+v confirmed", tc.ack)
		}
	}
	if !(redisconn.Ack{Acknowledged: 2}).Confirmed(c) {
		t.Error("2 of 2 not confirmed")
	}
}
