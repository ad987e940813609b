package ratelimit_test

import (
	"bufio"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// BenchmarkAllow compares, on a redis-server of its own, one key of a client
// allowed 10,000,000 requests a minute (every request admitted): a script
// that only returns (the floor of one EVALSHA) and WindowLua through
// Limiter.Allow, all on the server's clock as in
// production; and WindowLua for a client whose every request falls in a new
// bucket (one a second, on an injected clock: the bucket's expiry work).
//
// Beside ns/op (the Go client's whole round trip) it reports Redis's own
// time per EVALSHA: redis-us/call is usec_per_call of INFO commandstats (a
// mean, inflated by any preemption on a shared machine), redis-p50-us and
// redis-mid-us the median and the mean of the middle half of the SLOWLOG
// durations of every call (whole microseconds each; robust to preemption);
// and key-bytes, MEMORY USAGE of the key at the end. (The sliding log this
// package kept before, one sorted-set member per admitted request, measured
// in the same benchmark is in the package documentation.) Run with:
//
//	go test -run '^$' -bench BenchmarkAllow -benchtime 20000x ./pkg/ratelimit
func BenchmarkAllow(b *testing.B) {
	srv := redistest.StartServer(b, "--slowlog-log-slower-than", "0", "--slowlog-max-len", "1000000")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	const limit = 10_000_000
	return1, err := os.ReadFile("testdata/return1.lua")
	if err != nil {
		b.Fatal(err)
	}
	floor := luascript.New(luascript.File{Name: "pkg/ratelimit/testdata/return1.lua", Text: string(return1)})
	start := time.Now()
	onePerSecond := func(b *testing.B, key string, i int) error {
		at := start.Add(time.Duration(i) * time.Second)
		_, err := ratelimit.NewLimiter(rdb, limit, time.Minute, func() time.Time { return at }).Allow(b.Context(), key)
		return err
	}
	l := ratelimit.NewLimiter(rdb, limit, time.Minute, nil)
	for _, bc := range []struct {
		name string
		call func(b *testing.B, key string, i int) error
	}{
		{"Return1", func(b *testing.B, key string, _ int) error {
			return floor.Run(b.Context(), rdb, []string{key}, limit, 60_000, -1).Err()
		}},
		{"Window", func(b *testing.B, key string, _ int) error { _, err := l.Allow(b.Context(), key); return err }},
		{"WindowNewBucketEachCall", onePerSecond},
	} {
		b.Run(bc.name, func(b *testing.B) {
			key := "{svc_bench}:" + bc.name
			if err := bc.call(b, key, 0); err != nil { // loads the script
				b.Fatal(err)
			}
			if err := rdb.ConfigResetStat(b.Context()).Err(); err != nil {
				b.Fatal(err)
			}
			if err := rdb.SlowLogReset(b.Context()).Err(); err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				i++
				if err := bc.call(b, key, i); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(evalshaMicros(b, rdb), "redis-us/call")
			p50, mid := slowlogMicros(b, rdb)
			b.ReportMetric(p50, "redis-p50-us")
			b.ReportMetric(mid, "redis-mid-us")
			mem, _ := rdb.MemoryUsage(b.Context(), key).Result()
			b.ReportMetric(float64(mem), "key-bytes")
			rdb.Del(b.Context(), key)
		})
	}
}

// evalshaMicros reads usec_per_call of EVALSHA from INFO commandstats.
func evalshaMicros(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(b.Context(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(line, ",") {
			if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					b.Fatal(err)
				}
				return f
			}
		}
	}
	b.Fatalf("no cmdstat_evalsha in %q", info)
	return 0
}

// slowlogMicros returns the median and the mean of the middle half of the
// durations of the EVALSHA calls in the SLOWLOG.
func slowlogMicros(b *testing.B, rdb *redis.Client) (p50, mid float64) {
	logs, err := rdb.SlowLogGet(b.Context(), -1).Result()
	if err != nil {
		b.Fatal(err)
	}
	var ds []float64
	for _, l := range logs {
		if len(l.Args) > 0 && strings.EqualFold(l.Args[0], "evalsha") {
			ds = append(ds, float64(l.Duration.Microseconds()))
		}
	}
	n := len(ds)
	if n < 4 {
		b.Fatalf("%d EVALSHA calls in the SLOWLOG", n)
	}
	slices.Sort(ds)
	var sum float64
	for _, d := range ds[n/4 : 3*n/4] {
		sum += d
	}
	return ds[n/2], sum / float64(3*n/4-n/4)
}
