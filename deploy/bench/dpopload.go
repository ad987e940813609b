package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/dpop/dpoptest"
)

// The me-dpop scenario sends GET /api/v1/me/ with DPoP-bound tokens
// (Authorization: DPoP, RFC 9449 section 7.1) and a fresh proof per
// request. Proofs are single use (their jti is recorded in Redis) and
// accepted only while their iat is within dpop.DefaultWindow (60 s) of the
// server's clock, and wrk's Lua cannot sign them: the harness signs one
// proof per request right before each run, into one file per wrk thread,
// and caps the run at dpopMaxDuration so that every proof is still fresh
// when it is sent.
const (
	// dpopMaxDuration caps the measured run (and the warm-up) of me-dpop:
	// signing plus the run stay well inside dpop.DefaultWindow.
	dpopMaxDuration = 30 * time.Second
	// dpopMargin multiplies the expected request count: a thread that ran
	// out of proofs would resend its last one, a replay refused with 401.
	// The expected rate is already an upper bound (see dpopPrepare); the
	// margin covers the machine getting quieter between runs and the two
	// wrk threads not sending equally (a CI run of the quick harness sent
	// 1.6x me-dpop's previous rate once).
	dpopMargin = 2
	// dpopDefaultRate is the expected req/s when neither me-dpop nor me
	// ran before.
	dpopDefaultRate = 10000
	// dpopRetries is how many times a run whose threads ran out of proofs
	// (wrkResult.Exhausted) is repeated, each time with proofs for the rate
	// the short run reached: on a loaded machine me, which bounds the first
	// run's rate, can run slower than me-dpop then does (TestQuickRun).
	dpopRetries = 2
	// dpopSampled is how many replay records MEMORY USAGE samples.
	dpopSampled = 200
)

// boundClient is a load client with a DPoP key and a token bound to it.
type boundClient struct {
	ID, Token string
	Key       *dpoptest.Key
}

// boundSet mints, for every client of load, a token bound to a fresh key:
// a token request carrying a DPoP proof (RFC 9449 section 5), 16 at a time.
func (r *registry) boundSet(ctx context.Context, load []client) ([]boundClient, error) {
	set := make([]boundClient, len(load))
	var (
		wg       sync.WaitGroup
		next     = make(chan int)
		mu       sync.Mutex
		firstErr error
	)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				b, err := r.fetchBoundToken(ctx, load[i])
				mu.Lock()
				set[i], firstErr = b, cmp.Or(firstErr, err)
				mu.Unlock()
			}
		})
	}
	for i := range load {
		next <- i
	}
	close(next)
	wg.Wait()
	return set, firstErr
}

// fetchBoundToken asks the token endpoint for a token of c bound to a new key.
func (r *registry) fetchBoundToken(ctx context.Context, c client) (boundClient, error) {
	key := dpoptest.NewKey()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.tokenURL, strings.NewReader("grant_type=client_credentials"))
	if err != nil {
		return boundClient{}, err
	}
	req.Header.Set("Authorization", c.basic())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("DPoP", key.Sign(dpoptest.Proof{Method: http.MethodPost, URI: r.tokenURL}))
	resp, err := r.http.Do(req)
	if err != nil {
		return boundClient{}, fmt.Errorf("bound token for %s: %w", c.ID, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var tok struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tok) != nil || tok.AccessToken == "" || tok.TokenType != "DPoP" {
		return boundClient{}, fmt.Errorf("bound token for %s: %d %s", c.ID, resp.StatusCode, body)
	}
	return boundClient{ID: c.ID, Token: tok.AccessToken, Key: key}, nil
}

// proofLines signs n proofs of GET uri issued at now, rotating over set,
// each "TOKEN<TAB>PROOF" with its token's ath and a distinct random jti.
func proofLines(set []boundClient, uri string, n int, now time.Time) []string {
	lines := make([]string, n)
	var wg sync.WaitGroup
	workers := max(1, runtime.NumCPU())
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				b := set[i%len(set)]
				lines[i] = b.Token + "\t" + b.Key.Sign(dpoptest.Proof{Method: http.MethodGet, URI: uri, AccessToken: b.Token, IssuedAt: now})
			}
		})
	}
	wg.Wait()
	return lines
}

// splitLines deals lines out to threads slices, line i to slice i mod
// threads: disjoint, so no proof is sent twice.
func splitLines(lines []string, threads int) [][]string {
	out := make([][]string, threads)
	for i, l := range lines {
		out[i%threads] = append(out[i%threads], l)
	}
	return out
}

// writeProofFiles signs proofs for a run of d at rate req/s (with
// dpopMargin) and writes them to base.0, base.1, ... one file per wrk
// thread (me-dpop.lua reads its thread's). It returns base.
func writeProofFiles(base string, set []boundClient, uri string, rate float64, d time.Duration, threads int) (string, error) {
	n := max(int(rate*d.Seconds()*dpopMargin), 1000*threads)
	for i, part := range splitLines(proofLines(set, uri, n, time.Now()), threads) {
		if err := os.WriteFile(base+"."+strconv.Itoa(i), []byte(strings.Join(part, "\n")+"\n"), 0o600); err != nil {
			return "", err
		}
	}
	return base, nil
}

// dpopRecords is the replay records (`{CLIENT}:dpop:*`, deploy/docs/
// redis-keys.md) a me-dpop run left in Redis.
type dpopRecords struct {
	Count int64
	// BytesPerRecord is the mean MEMORY USAGE of up to dpopSampled of them.
	BytesPerRecord float64
}

// countDPoPRecords counts the replay records on every primary and samples
// their MEMORY USAGE.
func countDPoPRecords(ctx context.Context, rdb redis.UniversalClient) (dpopRecords, error) {
	var (
		mu           sync.Mutex
		rec          dpopRecords
		sampled, sum int64
	)
	err := forEachPrimary(ctx, rdb, func(ctx context.Context, node *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := node.Scan(ctx, cursor, dpopPattern, 10000).Result()
			if err != nil {
				return err
			}
			for _, k := range keys {
				mu.Lock()
				take := sampled < dpopSampled
				if take {
					sampled++
				}
				mu.Unlock()
				if !take {
					break
				}
				n, err := node.MemoryUsage(ctx, k).Result()
				if err != nil && err != redis.Nil {
					return err
				}
				mu.Lock()
				sum += n
				mu.Unlock()
			}
			mu.Lock()
			rec.Count += int64(len(keys))
			mu.Unlock()
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
	if err != nil {
		return dpopRecords{}, fmt.Errorf("count DPoP replay records: %w", err)
	}
	if sampled > 0 {
		rec.BytesPerRecord = float64(sum) / float64(sampled)
	}
	return rec, nil
}

// dpopPattern matches the DPoP replay records of every client.
const dpopPattern = "*:dpop:*"

// writeDPoP writes the replay records of each me-dpop run and the memory
// they would hold at that run's rate: a record lives dpop.ReplayTTL.
func writeDPoP(w io.Writer, runs []measurement) {
	ttl := dpop.ReplayTTL(0, 0)
	header := false
	for _, m := range runs {
		if m.DPoP == nil {
			continue
		}
		if !header {
			header = true
			fmt.Fprintf(w, "\n### DPoP replay records (me-dpop)\n\n")
			fmt.Fprintf(w, "Each proof's jti is recorded in Redis for dpop.ReplayTTL = %s; counted after each measured run (those of the\n", wholeSeconds(ttl))
			fmt.Fprintf(w, "warm-up deleted before it), MEMORY USAGE sampled over up to %d records; projected: req/s x %s x bytes/record.\n", dpopSampled, wholeSeconds(ttl))
			fmt.Fprintf(w, "Runs of me-dpop last at most %s: proofs are signed before the run and accepted only within %s of their iat.\n\n",
				wholeSeconds(dpopMaxDuration), wholeSeconds(dpop.DefaultWindow))
			fmt.Fprintln(w, "| clients | rep | req/s | records after the run | bytes/record | projected memory at that rate |")
			fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|")
		}
		rate := m.Wrk.Throughput()
		fmt.Fprintf(w, "| %s | %d | %s | %s | %.0f | %s |\n", fmtInt(int64(m.Size)), m.Rep, fmtInt(int64(rate+0.5)),
			fmtInt(m.DPoP.Count), m.DPoP.BytesPerRecord, fmtBytes(int64(rate*ttl.Seconds()*m.DPoP.BytesPerRecord)))
	}
}

// dpopPrepare readies a me-dpop wrk run (nothing for another scenario): its
// duration capped at dpopMaxDuration, the replay records of earlier runs
// deleted (so that the count after it is its own), and proofs signed now
// for its duration at dpopMargin times the larger of its own last req/s and
// me's (the same endpoint without the proof's work, run just before it in
// this repetition, so a bound on me-dpop's rate at this registry size), or
// dpopDefaultRate when neither ran, into the run's data files.
func (s *stack) dpopPrepare(ctx context.Context, sc string, run *wrkRun, what string) error {
	if sc != scMeDPoP {
		return nil
	}
	if len(s.dpopSet) == 0 {
		return fmt.Errorf("me-dpop: no bound tokens")
	}
	run.Duration = min(run.Duration, dpopMaxDuration)
	if err := clearKeys(ctx, s.rdb, dpopPattern); err != nil {
		return fmt.Errorf("clear DPoP replay records: %w", err)
	}
	rate := cmp.Or(max(s.lastRate[scMeDPoP], s.lastRate[scMe]), dpopDefaultRate)
	base := filepath.Join(s.dir, "me-dpop-"+what+".dat")
	var err error
	run.Data, err = writeProofFiles(base, s.dpopSet, s.resourceURL+run.Path, rate, run.Duration, run.Threads)
	return err
}

// dpopMint gives s the load's bound tokens when me-dpop is to run, and
// probes /me with the first.
func (s *stack) dpopMint(ctx context.Context, load []client) error {
	if !slices.Contains(s.cfg.Scenarios, scMeDPoP) {
		return nil
	}
	var err error
	if s.dpopSet, err = s.reg.boundSet(ctx, load); err != nil {
		return err
	}
	// One request as wrk will send it, so that a misconfiguration fails
	// here and not as a table of errors.
	b, uri := s.dpopSet[0], s.resourceURL+"/api/v1/me/"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "DPoP "+b.Token)
	req.Header.Set("DPoP", b.Key.Sign(dpoptest.Proof{Method: http.MethodGet, URI: uri, AccessToken: b.Token}))
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("probe me-dpop: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var me struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &me) != nil || me.ClientID != b.ID {
		return fmt.Errorf("probe me-dpop: %d %s %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body)
	}
	return nil
}

// dpopRecords counts, after a me-dpop run, the replay records it left (nil
// for another scenario).
func (s *stack) dpopRecords(ctx context.Context, sc string) (*dpopRecords, error) {
	if sc != scMeDPoP {
		return nil, nil
	}
	rec, err := countDPoPRecords(ctx, s.rdb)
	return &rec, err
}

// measureWhole measures sc as measure does and, when a me-dpop run's
// threads ran out of proofs, measures it again with proofs for the rate
// they reached (at most dpopRetries times): a replay the harness caused is
// not the server's error and is never reported as one.
func (s *stack) measureWhole(ctx context.Context, sc string, size, rep int, scripts map[string]string, data dataFiles) (measurement, error) {
	for try := 0; ; try++ {
		m, err := s.measure(ctx, sc, size, rep, scripts, data)
		if err != nil || m.Wrk.Exhausted == 0 {
			return m, err
		}
		if try == dpopRetries {
			return m, fmt.Errorf("%s clients=%d rep %d: the threads ran out of proofs %d times (%d sends past their data)", sc, size, rep, try+1, m.Wrk.Exhausted)
		}
		sent := float64(m.Wrk.Requests) / m.Wrk.Duration.Seconds()
		s.logf("%s clients=%d rep %d: the threads ran out of proofs (%d sends past their data at %.0f req/s); measuring again", sc, size, rep, m.Wrk.Exhausted, sent)
		s.lastRate[sc] = max(s.lastRate[sc], sent)
	}
}
