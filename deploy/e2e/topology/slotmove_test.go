//go:build unix

package topology

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestReshardKeyByKey moves the slot of a live client to another primary
// and back the way a slow reshard tool does, one MIGRATE per key 0.2-0.4 s
// apart (1-2 s in all), while token, introspection and /me requests of
// that client run against the real binaries (issue 27 point 12: 2 of 22
// requests were answered 503 after 1.7 s). While the client's keys are
// split between the two primaries, Redis answers every script on them
// TRYAGAIN; the servers try again until the move ends
// (redisconn.RetryMoving). It asserts that every request is answered 200,
// none later than answerWithin after the move ended (or after it was sent,
// when later) by its server's measure, clientSlack more by the test's
// client (as TestFreeze), and logs the figures.
func TestReshardKeyByKey(t *testing.T) {
	redistest.Long(t)
	requireCommand(t, "caddy")
	rc := redistest.StartCluster(t)
	top := startTopologyOn(t, 1, 1, rc.URL(), testPrefix(t, rc.URL()))
	live := &stallTarget{group: "moved", c: top.createClient(t, "events.subscribe")}
	load := newStallLoad(t, top, live)
	key := clientKey(top.prefix, live.c.ID)
	slot := rc.KeySlot(t, key)
	home := rc.PrimaryFor(t, key)
	var away *redistest.Server
	for _, p := range rc.Primaries(t) {
		if p != home {
			away = p
			break
		}
	}
	pause := func() time.Duration { return 200*time.Millisecond + rand.N(200*time.Millisecond) }
	for _, to := range []*redistest.Server{away, home} {
		_, _ = load.take()
		stop := make(chan struct{})
		done := load.run(stop)
		load.waitOK(t, time.Time{}, "every request answered 200 before the move")
		m := rc.MoveSlotKeyByKey(t, slot, to, pause)
		load.waitOK(t, time.Now().Add(time.Second), "every request answered 200 a second after the move "+m.String())
		close(stop)
		<-done
		recs, skipped := load.take()
		what := "move key by key " + m.String()
		// A skipped tick is the load's own cap (stallMaxInFlight requests
		// of one kind waiting), reached when the window outlasts 3 s on a
		// busy machine: logged, as TestFreeze does, not a failure of the
		// servers.
		t.Logf("%s: %d ticks skipped (%d requests waiting)", what, skipped, stallMaxInFlight)
		var during []stallRecord
		for _, r := range recs {
			if r.done.After(m.Opened) && r.sent.Before(m.Ended) {
				during = append(during, r)
			}
		}
		logStall(t, what+", sent or answered in the window", during)
		logStall(t, what+", in all", recs)
		if len(during) == 0 {
			t.Errorf("%s: no request met the window", what)
		}
		failed, late := 0, 0
		for _, r := range recs {
			if r.status != http.StatusOK {
				if failed++; failed <= 3 {
					t.Errorf("%s: %s %s sent %v after the window opened answered %d after %v %s", what, r.group, r.kind,
						r.sent.Sub(m.Opened).Round(time.Millisecond), r.status, r.latency().Round(time.Millisecond), r.err)
				}
			}
			// Within answerWithin of the move's end (or of the request,
			// when later) by the server's measure, and clientSlack more by
			// the client's (see answerWithin): the server answered no
			// sooner than sent + served, and no later than done.
			from := m.Ended
			if r.sent.After(from) {
				from = r.sent
			}
			if r.sent.Add(r.served).After(from.Add(answerWithin)) || r.done.After(from.Add(answerWithin+clientSlack)) {
				if late++; late > 3 {
					continue
				}
				t.Errorf("%s: %s %s sent %v after the window opened answered after %v (its server took %v), want within %v of the move's end (%v by the client's clock)",
					what, r.group, r.kind, r.sent.Sub(m.Opened).Round(time.Millisecond), r.latency().Round(time.Millisecond),
					r.served.Round(time.Millisecond), answerWithin, answerWithin+clientSlack)
			}
		}
		if failed > 0 || late > 0 {
			t.Errorf("%s: %d of %d requests failed, %d late (%d sent or answered in the window)", what, failed, len(recs), late, len(during))
		}
		if got := rc.PrimaryFor(t, key); got != to {
			t.Fatalf("after the move the slot is served by %s, want %s", got.Addr(), to.Addr())
		}
		rc.WaitSettled(t, 30*time.Second)
	}
}
