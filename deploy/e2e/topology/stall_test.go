//go:build unix

package topology

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// answerWithin is the bound on every answer while Redis stalls (issue 21
// point 1: "every request must be answered within about 2 s"): the Redis
// budget of a request (redisconn.DefaultCommandBudget, 1.5 s) plus the
// servers' own work. It holds for the time each server measured (its
// access record's duration); the test's own client, race-instrumented and
// sharing two cores with the servers, Redis and other tests, may see an
// answer up to clientSlack later.
const (
	answerWithin = 2 * time.Second
	clientSlack  = time.Second
)

// stallLoad is the traffic of TestFreeze and TestReshard: token,
// introspection and /me requests of a few clients, straight to one token
// service and one resource server, every answer recorded.
type stallLoad struct {
	top     *topology
	targets []*stallTarget
	client  *http.Client

	skipped atomic.Int64 // ticks that found stallMaxInFlight requests waiting

	mu      sync.Mutex
	records []stallRecord
}

// stallTarget is a client of the load: group names it in the results
// ("frozen": its slot's primary is the one stalled; "other": another
// shard's).
type stallTarget struct {
	group string
	c     credentials
	token string
}

type stallRecord struct {
	group, kind string
	sent, done  time.Time
	status      int // 0: transport error
	retryAfter  string
	err         string
	id          string        // X-Request-Id
	served      time.Duration // the server's access record's duration (0: none found)
}

func (r stallRecord) latency() time.Duration { return r.done.Sub(r.sent) }

func newStallLoad(t *testing.T, top *topology, targets ...*stallTarget) *stallLoad {
	for _, tg := range targets {
		top.cli(t, "clients", "set-rate-limit", tg.c.ID, "1000000")
		top.cli(t, "clients", "set-rate-limit", "--token", tg.c.ID, "1000000")
		tg.token = top.token(t, tg.c, basicAuth)
	}
	// A client timeout well above any stall, so that a held request shows
	// how long it was held.
	return &stallLoad{top: top, targets: targets,
		client: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: stallMaxInFlight}}}
}

func (l *stallLoad) request(tg *stallTarget, kind string) *http.Request {
	auth, resource := l.top.auth[0].base, l.top.resource[0].base
	var req *http.Request
	switch kind {
	case "token":
		req, _ = http.NewRequest(http.MethodPost, auth+"/api/v1/oauth/token/", strings.NewReader("grant_type=client_credentials"))
	case "introspect":
		req, _ = http.NewRequest(http.MethodPost, auth+"/api/v1/oauth/introspect/", strings.NewReader(url.Values{"token": {tg.token}}.Encode()))
	case "me":
		req, _ = http.NewRequest(http.MethodGet, resource+"/api/v1/me/", nil)
		req.Header.Set("Authorization", "Bearer "+tg.token)
		return req
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(tg.c.ID), url.QueryEscape(tg.c.Secret))
	return req
}

// The load is open: every stallEvery each client sends one request of each
// kind, whatever is still waiting for an answer (up to stallMaxInFlight
// per client and kind; a tick beyond that is counted as skipped), so a
// stalled Redis shows as many held requests, as it does in production.
const (
	stallEvery       = 10 * time.Millisecond
	stallMaxInFlight = 300
)

// run sends the load until stop is closed; the returned channel is closed
// once every request has been answered.
func (l *stallLoad) run(stop <-chan struct{}) <-chan struct{} {
	var wg sync.WaitGroup
	for _, tg := range l.targets {
		for _, kind := range []string{"token", "introspect", "me"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tick := time.NewTicker(stallEvery)
				defer tick.Stop()
				inFlight := make(chan struct{}, stallMaxInFlight)
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					select {
					case inFlight <- struct{}{}:
						wg.Add(1)
						go func() {
							defer wg.Done()
							l.send(tg, kind)
							<-inFlight
						}()
					default:
						l.skipped.Add(1)
					}
				}
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

func (l *stallLoad) send(tg *stallTarget, kind string) {
	r := stallRecord{group: tg.group, kind: kind, sent: time.Now()}
	resp, err := l.client.Do(l.request(tg, kind))
	if err != nil {
		r.err = err.Error()
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		r.status, r.retryAfter, r.id = resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-Request-Id")
	}
	r.done = time.Now()
	l.mu.Lock()
	l.records = append(l.records, r)
	l.mu.Unlock()
}

// okSince reports whether every target and kind has had a 200 for a
// request sent after since: the condition the suites wait on instead of
// a fixed span of load.
func (l *stallLoad) okSince(since time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok := map[string]bool{}
	for _, r := range l.records {
		if r.status == http.StatusOK && r.sent.After(since) {
			ok[r.group+" "+r.kind] = true
		}
	}
	return len(ok) >= 3*len(l.targets)
}

// waitOK waits until okSince(since) holds.
func (l *stallLoad) waitOK(t *testing.T, since time.Time, what string) {
	t.Helper()
	testwait.Eventually(t, 60*time.Second, what, func() bool { return l.okSince(since) })
}

// take returns the records so far, each with the duration its server
// logged, and forgets them; and how many ticks were skipped.
func (l *stallLoad) take() ([]stallRecord, int64) {
	l.mu.Lock()
	out := l.records
	l.records = nil
	l.mu.Unlock()
	served := map[string]time.Duration{}
	for _, s := range []*server{l.top.auth[0], l.top.resource[0]} {
		for line := range strings.Lines(s.Out.String()) {
			if !strings.Contains(line, `"msg":"request"`) {
				continue
			}
			var rec struct {
				ID       string `json:"request_id"`
				Duration int64  `json:"duration"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.ID != "" {
				served[rec.ID] = time.Duration(rec.Duration)
			}
		}
	}
	for i := range out {
		out[i].served = served[out[i].id]
	}
	return out, l.skipped.Swap(0)
}

// stallSummary is one line of figures: requests, answers by status, and
// latency (median, p99, max) as the test's client saw it and as the
// servers logged it.
func stallSummary(recs []stallRecord) string {
	counts := map[string]int{}
	var client, served []time.Duration
	for _, r := range recs {
		label := strconv.Itoa(r.status)
		if r.status == 0 {
			label = "transport error"
		}
		counts[label]++
		client = append(client, r.latency())
		if r.served > 0 {
			served = append(served, r.served)
		}
	}
	if len(client) == 0 {
		return "no request"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond)) }
	dist := func(d []time.Duration) string {
		if len(d) == 0 {
			return "none"
		}
		slices.Sort(d)
		over := 0
		for _, x := range d {
			if x > answerWithin {
				over++
			}
		}
		return fmt.Sprintf("median %s p99 %s max %s, %d over %v", ms(d[len(d)/2]), ms(d[len(d)*99/100]), ms(d[len(d)-1]), over, answerWithin)
	}
	return fmt.Sprintf("%5d requests %v; client: %s; server: %s", len(recs), formatCounts(counts), dist(client), dist(served))
}

// logStall logs the figures of recs by group and kind, and in all.
func logStall(t *testing.T, what string, recs []stallRecord) {
	t.Helper()
	by := map[string][]stallRecord{}
	for _, r := range recs {
		by[r.group+" "+r.kind] = append(by[r.group+" "+r.kind], r)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range by {
			if !yield(k) {
				return
			}
		}
	}) {
		t.Logf("%s: %-17s %s", what, k, stallSummary(by[k]))
	}
	t.Logf("%s: %-17s %s", what, "all", stallSummary(recs))
}

// checkAnswered asserts that every request was answered (no transport
// error) with 200 or with 503 and Retry-After, within answerWithin by its
// server's measure and answerWithin + clientSlack by the client's.
func checkAnswered(t *testing.T, what string, recs []stallRecord) {
	t.Helper()
	const maxReports = 5
	reports := 0
	report := func(format string, args ...any) {
		t.Helper()
		if reports < maxReports {
			t.Errorf(what+": "+format, args...)
		}
		reports++
	}
	for _, r := range recs {
		switch {
		case r.status == 0:
			report("%s %s: transport error after %v: %s", r.group, r.kind, r.latency().Round(time.Millisecond), r.err)
		case r.status == http.StatusServiceUnavailable && r.retryAfter == "":
			report("%s %s: 503 without Retry-After", r.group, r.kind)
		case r.status != http.StatusOK && r.status != http.StatusServiceUnavailable:
			report("%s %s: answered %d", r.group, r.kind, r.status)
		}
		if r.served > answerWithin {
			report("%s %s: the server answered %d after %v, want within %v", r.group, r.kind, r.status, r.served.Round(time.Millisecond), answerWithin)
		}
		if r.status != 0 && r.latency() > answerWithin+clientSlack {
			report("%s %s: answered %d after %v (the server's measure: %v), want within %v", r.group, r.kind, r.status,
				r.latency().Round(time.Millisecond), r.served.Round(time.Millisecond), answerWithin+clientSlack)
		}
	}
	if reports > maxReports {
		t.Errorf("%s: %d more failures", what, reports-maxReports)
	}
}

// TestFreeze stops (SIGSTOP, not a crash) the primary that holds a client
// for 1.5 s and then for 5 s while token, introspection and /me requests of
// that client, and on a Cluster of a client of another shard, run against
// the real binaries (issue 21 point 1). It asserts that:
//
//   - every request is answered within answerWithin (2 s, by the server's
//     own measure; the test's client may see up to a second more) whatever
//     Redis does: 200, or 503 with Retry-After, never held until the
//     primary is continued, never a transport error;
//   - on a Cluster, the other shard's client is answered 200 throughout,
//     also in the second or so of CLUSTERDOWN between the frozen primary's
//     failure and its replica's promotion (the longer freeze), which the
//     servers wait out inside the request's Redis budget;
//   - every request sent 2 s or more after the primary is continued is
//     answered 200.
//
// It logs each phase's figures: requests, answers by status, median, p99
// and max latency.
func TestFreeze(t *testing.T) {
	redistest.Long(t)
	requireCommand(t, "caddy")
	t.Run("cluster", func(t *testing.T) {
		rc := redistest.StartCluster(t)
		top := startTopologyOn(t, 1, 1, rc.URL(), testPrefix(t, rc.URL()))
		frozen := &stallTarget{group: "frozen", c: top.createClient(t, "events.subscribe")}
		primary := rc.PrimaryFor(t, clientKey(top.prefix, frozen.c.ID))
		other := &stallTarget{group: "other"}
		for i := 0; other.c.ID == ""; i++ {
			c := top.createClient(t, "events.subscribe")
			if rc.PrimaryFor(t, clientKey(top.prefix, c.ID)) != primary {
				other.c = c
			} else if i == 20 {
				t.Fatal("20 clients, all on one shard")
			}
		}
		load := newStallLoad(t, top, frozen, other)
		for _, d := range []time.Duration{1500 * time.Millisecond, 5 * time.Second} {
			p := rc.PrimaryFor(t, clientKey(top.prefix, frozen.c.ID))
			freezeUnderLoad(t, load, p, d, func() string {
				return "primary of the frozen client's slot now " + rc.PrimaryFor(t, clientKey(top.prefix, frozen.c.ID)).Addr()
			})
			rc.WaitSettled(t, 30*time.Second)
		}
	})
	t.Run("sentinel", func(t *testing.T) {
		rs := redistest.StartSentinel(t)
		top := startTopologyOn(t, 1, 1, rs.URL(), testPrefix(t, rs.URL()))
		load := newStallLoad(t, top, &stallTarget{group: "frozen", c: top.createClient(t, "events.subscribe")})
		for _, d := range []time.Duration{1500 * time.Millisecond, 5 * time.Second} {
			freezeUnderLoad(t, load, rs.PrimaryFor(t, ""), d, func() string {
				return "primary now " + rs.PrimaryFor(t, "").Addr()
			})
			rs.WaitSettled(t, 30*time.Second)
		}
	})
}

// freezeUnderLoad runs load for a second, freezes primary for d, thaws it,
// runs load 4 s more and checks the answers.
func freezeUnderLoad(t *testing.T, load *stallLoad, primary *redistest.Server, d time.Duration, after func() string) {
	t.Helper()
	const recoverWithin = 2 * time.Second
	what := fmt.Sprintf("freeze %v of %s", d, primary.Addr())
	_, _ = load.take()
	stop := make(chan struct{})
	done := load.run(stop)
	load.waitOK(t, time.Time{}, what+": every request answered 200 before the freeze")
	frozeAt := time.Now()
	primary.Freeze()
	// The freeze's length is this case's input (a stall of d): there is no
	// condition to wait on, only the time to let pass.
	time.Sleep(d)
	primary.Thaw()
	thawedAt := time.Now()
	load.waitOK(t, thawedAt.Add(recoverWithin+time.Second), what+": every request answered 200 after the recovery window")
	close(stop)
	<-done
	recs, skipped := load.take()
	t.Logf("%s: %s; %d ticks skipped (%d requests waiting)", what, after(), skipped, stallMaxInFlight)

	var during, recovery []stallRecord
	for _, r := range recs {
		if r.done.After(frozeAt) && r.sent.Before(thawedAt) {
			during = append(during, r)
		} else {
			recovery = append(recovery, r)
		}
	}
	logStall(t, what+", sent or answered while frozen", during)
	logStall(t, what+", the rest", recovery)
	checkAnswered(t, what, recs)
	late := 0
	for _, r := range recs {
		if r.sent.After(thawedAt.Add(recoverWithin)) && r.status != http.StatusOK {
			if late < 5 {
				t.Errorf("%s: %s %s sent %v after the thaw answered %d: not recovered within %v",
					what, r.group, r.kind, r.sent.Sub(thawedAt).Round(time.Millisecond), r.status, recoverWithin)
			}
			late++
		}
		if r.status != http.StatusOK && (r.done.Before(frozeAt) || r.group == "other") {
			t.Errorf("%s: %s %s sent %v after the freeze answered %d", what, r.group, r.kind, r.sent.Sub(frozeAt).Round(time.Millisecond), r.status)
		}
	}
}

// TestReshard moves the slot of a live client from its primary to another
// one and back (CLUSTER SETSLOT IMPORTING/MIGRATING, MIGRATE of its keys,
// SETSLOT NODE: what redis-cli --cluster reshard does for each slot) while
// token, introspection and /me requests of that client run against the
// real binaries (issue 21 point 2). The first move holds the slot
// MIGRATING/IMPORTING for 300 ms before and after its keys move, so the
// window is several hundred milliseconds wide; the second holds it no
// longer than the MIGRATEs take, as redis-cli does. While the window is
// open the token service's script (whose per-address failure key does not
// exist) is answered TRYAGAIN by both nodes. It asserts that no request
// fails and every one is answered within answerWithin (as TestFreeze
// measures it), and logs the figures.
func TestReshard(t *testing.T) {
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
	for _, step := range []struct {
		to   *redistest.Server
		hold time.Duration
	}{{away, 300 * time.Millisecond}, {home, 0}} {
		_, _ = load.take()
		stop := make(chan struct{})
		done := load.run(stop)
		load.waitOK(t, time.Time{}, "every request answered 200 before the move")
		m := rc.MoveSlot(t, slot, step.to, step.hold)
		load.waitOK(t, time.Now().Add(time.Second), "every request answered 200 a second after the move "+m.String())
		close(stop)
		<-done
		recs, skipped := load.take()
		what := "move " + m.String()
		if skipped > 0 {
			t.Errorf("%s: %d ticks skipped", what, skipped)
		}
		var during []stallRecord
		for _, r := range recs {
			if r.done.After(m.Opened) && r.sent.Before(m.Ended) {
				during = append(during, r)
			}
		}
		logStall(t, what+", sent or answered in the window", during)
		logStall(t, what+", in all", recs)
		checkAnswered(t, what, recs)
		for _, r := range recs {
			if r.status != http.StatusOK {
				t.Errorf("%s: %s %s answered %d after %v", what, r.group, r.kind, r.status, r.latency().Round(time.Millisecond))
				break
			}
		}
		if got := rc.PrimaryFor(t, key); got != step.to {
			t.Fatalf("after the move the slot is served by %s, want %s", got.Addr(), step.to.Addr())
		}
		rc.WaitSettled(t, 30*time.Second)
	}
}
