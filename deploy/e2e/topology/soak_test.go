//go:build unix

package topology

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// soakFor is the length of TestSoak's load: 0 is the short run of CI.
var soakFor = flag.Duration("soak", 0, "run TestSoak's load for this long, rotating the secret every 10s (0: the short CI run, "+
	soakShort.String()+" rotating every "+soakShortRotation.String()+")")

const (
	// The short run of CI, and the rotation interval of long runs (issue
	// point 7: "rotated every 10 s").
	soakShort         = 25 * time.Second
	soakShortRotation = 5 * time.Second
	soakLongRotation  = 10 * time.Second
	// soakRate is the fixed request rate through the edge, per second.
	soakRate = 100
	// soakWorkers bounds the requests in flight; a tick that finds every
	// worker busy is counted as skipped, never queued without bound.
	soakWorkers = 16
	// Of every soakTokenEvery requests one is a token request; of every
	// soakStaleEvery calls of GET /api/v1/me/ one uses a token of the
	// generation before the current one, so that tokens of rotated secrets
	// are tried throughout, not only around the rotations.
	soakTokenEvery = 5
	soakStaleEvery = 10
	// soakLimit is the client's API and token requests per minute: the
	// soak is about rotation and memory, not limits.
	soakLimit = 1_000_000
	// RSS is "flat" when no sample after the warm-up exceeds twice the first
	// one after it plus rssSlack.
	rssSlack = 20 << 20
)

// TestSoak sends a fixed-rate load through the edge for a while (-soak; a
// short run by default) while the operator rotates one client's secret
// again and again with the CLI (issue point 7). Every answer is recorded
// with the generation of the secret its token, or its request, came from,
// and when it was sent and answered. It asserts:
//
//   - no 5xx and no transport error;
//   - nothing sent after a rotation command returned is accepted with the
//     secret it rotated or a token issued under that secret (401), and at
//     least one such request was tried for every rotation;
//   - everything sent and answered before a rotation began, and every
//     request of the current generation, is accepted (no spurious 401);
//   - the resident memory of every server process stays flat: no sample
//     after the warm-up above twice the first one after it plus 20 MB.
func TestSoak(t *testing.T) {
	redistest.Long(t)
	requireCommand(t, "redis-server")
	requireCommand(t, "caddy")
	length, every := soakShort, soakShortRotation
	if *soakFor > 0 {
		length, every = *soakFor, soakLongRotation
	}
	if d, ok := t.Deadline(); ok && time.Until(d) < length+2*time.Minute {
		t.Fatalf("-soak=%v does not fit in the test's -timeout (%v left): raise -timeout", length, time.Until(d).Round(time.Second))
	}
	warmup := min(max(length/5, 5*time.Second), 30*time.Second)

	top := startTopology(t, 2, 2)
	redisLatency := watchRedisLatency(t, top.redisURL)
	c := top.cliCredentials(t, "clients", "create", "--org", testOrg, "--name", "soak client", "--audience", "hospital",
		"--scopes", "events.subscribe", "--rate-limit", strconv.Itoa(soakLimit))
	top.cli(t, "clients", "set-rate-limit", "--token", c.ID, strconv.Itoa(soakLimit))
	servers := append(slices.Clone(top.auth), top.resource...)

	st := &soakState{secrets: []string{c.Secret}, ended: []time.Time{{}}, began: []time.Time{{}}, tokens: map[int]string{}}
	st.tokens[0] = top.token(t, c, basicAuth)
	sl := &soakLoad{top: top, id: c.ID, st: st, client: newSoakClient()}
	defer sl.client.CloseIdleConnections()

	rss := startRSSSampler(servers, time.Second)
	loadStart := time.Now()
	done := sl.run(length)

	// The operator: rotate every `every` until the load ends, each time
	// recording when the command began and returned. After each, the old
	// secret is presented once more, as a partner that missed the rotation
	// would.
	var rotations []time.Duration
	for next := loadStart.Add(every); next.Add(every / 2).Before(loadStart.Add(length)); next = next.Add(every) {
		// The rotations are a schedule (one every `every`), not a
		// condition: the soak is about what a steady operator does.
		time.Sleep(time.Until(next))
		began := time.Now()
		rotated := top.cliCredentials(t, "clients", "rotate-secret", c.ID)
		returned := time.Now()
		rotations = append(rotations, returned.Sub(began))
		st.rotated(began, returned, rotated.Secret)
		sl.oldSecret(st.generation() - 1)
	}
	<-done
	loadEnd := time.Now()
	series := rss.stop()

	records := sl.recordsCopy()
	checkSoak(t, st, records)
	checkRSS(t, series, loadStart.Add(warmup))
	if t.Failed() {
		t.Logf("Redis's own latency events (LATENCY LATEST: event, when, latest ms, max ms; threshold %d ms): %s",
			latencyThresholdMS, redisLatency())
	}

	t.Logf("load: %v at %d requests/s through the edge (%d workers), rotation every %v; %d requests sent, %d ticks skipped (every worker busy)",
		loadEnd.Sub(loadStart).Round(time.Millisecond), soakRate, soakWorkers, every, len(records), sl.skipped.Load())
	t.Logf("answers: %s", formatCounts(countBy(records, func(r soakRecord) string { return r.kind + " " + statusText(r) })))
	t.Logf("rotations: %d, CLI time %s", len(rotations), durations(rotations))
	t.Logf("latency: %s", durations(latencies(records)))
	t.Logf("RSS, warm-up %v:\n%s", warmup, series.summary(loadStart.Add(warmup)))
}

// soakState is the client's credentials over time. Generation g is the
// secret in force after g rotations: secrets[g], began[g] and ended[g] are
// when the rotation that ended it began and returned (zero while it is the
// current one), tokens[g] the newest token issued for it.
type soakState struct {
	mu      sync.Mutex
	secrets []string
	began   []time.Time
	ended   []time.Time
	tokens  map[int]string
}

func (s *soakState) generation() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.secrets) - 1
}

// rotated records a rotation: the current generation ended when the
// command returned, and a new one begins with secret.
func (s *soakState) rotated(began, returned time.Time, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := len(s.secrets) - 1
	s.began[g], s.ended[g] = began, returned
	s.secrets = append(s.secrets, secret)
	s.began, s.ended = append(s.began, time.Time{}), append(s.ended, time.Time{})
}

// secret returns the current generation and its secret.
func (s *soakState) secret() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := len(s.secrets) - 1
	return g, s.secrets[g]
}

// token returns the newest token of generation at most max, and its
// generation (-1 if there is none).
func (s *soakState) token(maxGen int) (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for g := maxGen; g >= 0; g-- {
		if tok, ok := s.tokens[g]; ok {
			return g, tok
		}
	}
	return -1, ""
}

func (s *soakState) issued(g int, tok string) {
	s.mu.Lock()
	s.tokens[g] = tok
	s.mu.Unlock()
}

// window returns when the rotation that ended generation g began and
// returned (zero if g is current).
func (s *soakState) window(g int) (began, ended time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.began[g], s.ended[g]
}

// soakRecord is one request of the soak and its answer.
type soakRecord struct {
	kind       string // "token" or "me"
	gen        int    // generation of the secret, or of the token's secret
	stale      bool   // sent on purpose with a rotated credential
	sent, recv time.Time
	status     int    // 0 for a transport error
	note       string // the error, or the start of a body that is not a 200's
}

// soakLoad is the fixed-rate load.
type soakLoad struct {
	top     *topology
	id      string
	st      *soakState
	client  *http.Client
	skipped atomic.Int64

	mu      sync.Mutex
	records []soakRecord
}

// run sends soakRate requests per second for length, from soakWorkers
// goroutines, at most soakRate*length in all. The returned channel is
// closed once every answer is in.
func (sl *soakLoad) run(length time.Duration) <-chan struct{} {
	jobs := make(chan int, soakWorkers) // absorbs jitter; a tick that finds it full is skipped
	var wg sync.WaitGroup
	for range soakWorkers {
		wg.Go(func() {
			for i := range jobs {
				sl.request(i)
			}
		})
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer wg.Wait()
		defer close(jobs)
		tick := time.NewTicker(time.Second / soakRate)
		defer tick.Stop()
		end := time.After(length)
		limit := int(length.Seconds()*soakRate) + 1
		for i := 0; i < limit; i++ {
			select {
			case <-end:
				return
			case <-tick.C:
			}
			select {
			case jobs <- i:
			default:
				sl.skipped.Add(1)
			}
		}
	}()
	return done
}

// request sends request number i: a token request with the current secret,
// or GET /api/v1/me/ with the newest token, or, now and then, with a token
// of the generation before the current one.
func (sl *soakLoad) request(i int) {
	if i%soakTokenEvery == 0 {
		g, secret := sl.st.secret()
		r, tok := sl.token(secret)
		r.gen = g
		if tok != "" {
			sl.st.issued(g, tok)
		}
		sl.record(r)
		return
	}
	cur := sl.st.generation()
	stale := i%soakStaleEvery == 1 && cur > 0
	want := cur
	if stale {
		want = cur - 1
	}
	g, tok := sl.st.token(want)
	if g < 0 {
		return
	}
	r := sl.me(tok)
	r.gen, r.stale = g, stale
	sl.record(r)
}

// oldSecret presents the secret of generation g once, as a partner that
// missed the rotation would.
func (sl *soakLoad) oldSecret(g int) {
	sl.st.mu.Lock()
	secret := sl.st.secrets[g]
	sl.st.mu.Unlock()
	r, _ := sl.token(secret)
	r.gen, r.stale = g, true
	sl.record(r)
}

func (sl *soakLoad) token(secret string) (soakRecord, string) {
	req, err := http.NewRequest(http.MethodPost, sl.top.edge+"/api/v1/oauth/token/", strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		return soakRecord{kind: "token", note: err.Error()}, ""
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(sl.id), url.QueryEscape(secret))
	r, body := sl.do("token", req)
	if r.status != http.StatusOK {
		return r, ""
	}
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if json.Unmarshal(body, &tok) != nil || !strings.HasPrefix(tok.AccessToken, "svc_at_") {
		r.status, r.note = -1, "200 without a token: "+snippet(body)
		return r, ""
	}
	return r, tok.AccessToken
}

func (sl *soakLoad) me(token string) soakRecord {
	req, err := http.NewRequest(http.MethodGet, sl.top.edge+"/api/v1/me/", nil)
	if err != nil {
		return soakRecord{kind: "me", note: err.Error()}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	r, body := sl.do("me", req)
	if r.status == http.StatusOK && !bytes.Contains(body, []byte(`"client_id":"`+sl.id+`"`)) {
		r.status, r.note = -1, "200 that does not describe the client: "+snippet(body)
	}
	return r
}

func (sl *soakLoad) do(kind string, req *http.Request) (soakRecord, []byte) {
	r := soakRecord{kind: kind, sent: time.Now()}
	resp, err := sl.client.Do(req)
	if err != nil {
		r.recv, r.note = time.Now(), err.Error()
		return r, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	r.recv, r.status = time.Now(), resp.StatusCode
	if err != nil {
		r.status, r.note = 0, "read body: "+err.Error()
	} else if r.status != http.StatusOK {
		r.note = snippet(body)
	}
	return r, body
}

func (sl *soakLoad) record(r soakRecord) {
	sl.mu.Lock()
	sl.records = append(sl.records, r)
	sl.mu.Unlock()
}

func (sl *soakLoad) recordsCopy() []soakRecord {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return slices.Clone(sl.records)
}

// newSoakClient is the partner's client (from partnerAddr) with enough idle
// connections for soakWorkers, so the load does not churn ports.
func newSoakClient() *http.Client {
	c := newPartnerClient()
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = soakWorkers
	return c
}

// checkSoak applies TestSoak's assertions to every record.
func checkSoak(t *testing.T, st *soakState, records []soakRecord) {
	t.Helper()
	bad := 0
	fail := func(format string, args ...any) {
		t.Helper()
		if bad++; bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	gens := st.generation() + 1
	triedAfter := make([]int, gens) // per generation: requests with it after its rotation returned
	for _, r := range records {
		began, ended := st.window(r.gen)
		switch {
		case r.status == 0:
			fail("transport error: %s %s", r.kind, r.note)
		case r.status == -1:
			fail("%s: %s", r.kind, r.note)
		case r.status >= 500:
			fail("%s answered %d: %s", r.kind, r.status, r.note)
		case !ended.IsZero() && r.sent.After(ended):
			triedAfter[r.gen]++
			if r.status != http.StatusUnauthorized {
				fail("%s with generation %d, sent %v after the rotation returned, answered %d (want 401): %s",
					r.kind, r.gen, r.sent.Sub(ended), r.status, r.note)
			}
		case r.status == http.StatusOK:
		case r.status == http.StatusUnauthorized && !began.IsZero() && r.recv.After(began):
			// Sent before the rotation returned, answered after it began:
			// either answer is right.
		default:
			fail("%s with generation %d (current until %v), sent %v: answered %d: %s",
				r.kind, r.gen, ended, r.sent, r.status, r.note)
		}
	}
	if bad > 20 {
		t.Errorf("... %d bad answers in all", bad)
	}
	for g := range gens - 1 {
		if triedAfter[g] == 0 {
			t.Errorf("no request used generation %d after its rotation returned: the rotation was not tested", g)
		}
	}
	t.Logf("requests with a rotated secret or its tokens, sent after the rotation returned: %v (per rotation), all answered 401", triedAfter[:gens-1])
}

// statusText is a record's status for the tallies.
func statusText(r soakRecord) string {
	switch r.status {
	case 0:
		return "transport error"
	case -1:
		return "bad 200"
	}
	return strconv.Itoa(r.status)
}

func countBy(records []soakRecord, key func(soakRecord) string) map[string]int {
	n := map[string]int{}
	for _, r := range records {
		n[key(r)]++
	}
	return n
}

func formatCounts(n map[string]int) string {
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, n[k])
	}
	return strings.Join(parts, ", ")
}

func latencies(records []soakRecord) []time.Duration {
	d := make([]time.Duration, 0, len(records))
	for _, r := range records {
		d = append(d, r.recv.Sub(r.sent))
	}
	return d
}

// durations summarises durations: median, p99 and max.
func durations(d []time.Duration) string {
	if len(d) == 0 {
		return "none"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	r := func(x time.Duration) time.Duration { return x.Round(100 * time.Microsecond) }
	return fmt.Sprintf("median %v, p99 %v, max %v (n=%d)", r(s[len(s)/2]), r(s[len(s)*99/100]), r(s[len(s)-1]), len(s))
}

func snippet(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// rssSample is the resident set size of one process at one time.
type rssSample struct {
	at    time.Time
	bytes int64
}

// rssSeries are the samples of each server process.
type rssSeries struct {
	names   []string
	samples map[string][]rssSample
	errs    map[string]string
}

// rssSampler reads VmRSS from /proc/PID/status of every server at a fixed
// interval.
type rssSampler struct {
	stopc  chan struct{}
	done   chan struct{}
	series rssSeries
}

func startRSSSampler(servers []*server, every time.Duration) *rssSampler {
	s := &rssSampler{stopc: make(chan struct{}), done: make(chan struct{}),
		series: rssSeries{samples: map[string][]rssSample{}, errs: map[string]string{}}}
	for _, srv := range servers {
		s.series.names = append(s.series.names, srv.Name)
	}
	sample := func() {
		for _, srv := range servers {
			if _, failed := s.series.errs[srv.Name]; failed {
				continue
			}
			b, err := vmRSS(srv.Cmd.Process.Pid)
			if err != nil {
				s.series.errs[srv.Name] = err.Error()
				continue
			}
			s.series.samples[srv.Name] = append(s.series.samples[srv.Name], rssSample{at: time.Now(), bytes: b})
		}
	}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		sample()
		for {
			select {
			case <-s.stopc:
				sample()
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the series.
func (s *rssSampler) stop() rssSeries {
	close(s.stopc)
	<-s.done
	return s.series
}

// vmRSS reads the resident set size of process pid (Linux /proc).
func vmRSS(pid int) (int64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// checkRSS fails the test when a server's RSS after warm is more than twice
// its first sample after warm plus rssSlack.
func checkRSS(t *testing.T, series rssSeries, warm time.Time) {
	t.Helper()
	for _, name := range series.names {
		if msg, failed := series.errs[name]; failed {
			t.Logf("RSS of %s not sampled: %s", name, msg)
			continue
		}
		after := samplesAfter(series.samples[name], warm)
		if len(after) < 2 {
			t.Errorf("RSS of %s: %d samples after the warm-up", name, len(after))
			continue
		}
		base, peak := after[0].bytes, slices.MaxFunc(after, byBytes).bytes
		if limit := 2*base + rssSlack; peak > limit {
			t.Errorf("RSS of %s grew from %s (first sample after the warm-up) to %s, above the limit %s",
				name, mb(base), mb(peak), mb(limit))
		}
	}
}

func byBytes(a, b rssSample) int { return cmp.Compare(a.bytes, b.bytes) }

func samplesAfter(samples []rssSample, warm time.Time) []rssSample {
	for i, s := range samples {
		if !s.at.Before(warm) {
			return samples[i:]
		}
	}
	return nil
}

// summary prints, per server, the first sample after warm, min, max and
// last, and the whole series in MB (one sample a second; at most 60 shown,
// evenly spread).
func (series rssSeries) summary(warm time.Time) string {
	var b strings.Builder
	for _, name := range series.names {
		all := series.samples[name]
		after := samplesAfter(all, warm)
		if len(after) == 0 {
			fmt.Fprintf(&b, "  %s: no samples after the warm-up\n", name)
			continue
		}
		lo := slices.MinFunc(after, byBytes).bytes
		hi := slices.MaxFunc(after, byBytes).bytes
		fmt.Fprintf(&b, "  %s: first after warm-up %s, min %s, max %s, last %s (limit %s); series:",
			name, mb(after[0].bytes), mb(lo), mb(hi), mb(after[len(after)-1].bytes), mb(2*after[0].bytes+rssSlack))
		step := max(1, (len(all)+59)/60)
		for i := 0; i < len(all); i += step {
			fmt.Fprintf(&b, " %.1f", float64(all[i].bytes)/(1<<20))
		}
		b.WriteString(" MB\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/(1<<20)) }

// latencyThresholdMS is the latency-monitor-threshold TestSoak sets on its
// Redis: an event of Redis's own (a command, an fsync of the AOF, a fork)
// that took this long or longer is recorded.
const latencyThresholdMS = 100

// watchRedisLatency turns on the latency monitor of the Redis at url and
// returns what LATENCY LATEST says when called. A 503 of the soak's comes
// from the servers' budget for a Redis that did not answer in time; this
// says whether Redis itself stalled meanwhile (once, in CI, it answered
// nothing for about three seconds with the AOF fsynced on every write, and
// nothing said why).
func watchRedisLatency(t *testing.T, url string) func() string {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redis URL %q: %v", url, err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "latency-monitor-threshold", strconv.Itoa(latencyThresholdMS)).Err(); err != nil {
		t.Fatalf("CONFIG SET latency-monitor-threshold: %v", err)
	}
	return func() string {
		v, err := rdb.Do(ctx, "latency", "latest").Slice()
		if err != nil {
			return "unread: " + err.Error()
		}
		if len(v) == 0 {
			return "none"
		}
		return fmt.Sprint(v...)
	}
}
