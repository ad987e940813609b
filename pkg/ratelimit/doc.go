// Package ratelimit counts requests in Redis, per limited subject (a client,
// an address), in a ring of bucket counters of constant size: memory and
// Redis CPU per request do not grow with the limit or the traffic.
//
// The counting is done by a Lua function (window_limit, in window.lua:
// WindowLua, WindowFile) that other packages compose before their own
// scripts (package luascript, which keeps Redis's error line numbers
// pointing into both files), so a caller can check state and count in one
// Redis round trip. Package ratelimittest reads what it stored, for
// tests.
//
// # How it counts
//
// A window of W ms is cut into buckets of b = ceil(W/60) ms (1 s for a
// minute); a request at time t (ms) belongs to bucket floor(t/b), and each
// bucket keeps its count and the time of its newest admitted request. At
// time now the counted requests are those of the buckets whose newest
// request is later than now-W: a bucket, and every request in it, leaves
// the count exactly W after its newest request. A request is admitted when
// fewer than the limit N are counted. So an admitted request counts for at
// least W and less than W+b ms.
//
// # The promise (tested against a plain list of request times)
//
//   - Never more than N admitted in any interval of W ms, whichever replica
//     counts: of the requests admitted in such an interval, the last one to
//     be admitted counted all the others (their buckets' newest requests
//     were later than its now-W) and saw fewer than N.
//   - A refusal only ever comes early, never late: it means at least N were
//     admitted in the last W+b-1 ms (the window plus at most one bucket).
//   - When refused, Decision.Wait is the time until a request would be
//     admitted, with nothing admitted in between: until the bucket holding
//     the N-th newest counted request has left, W after that bucket's newest
//     request. It is no earlier than an exact sliding log would admit again,
//     less than one bucket later, and never more than W: that newest request
//     is no later than the refusal. A request at now+Wait is admitted, one a
//     millisecond earlier is not. Decision.RetryAfterSeconds rounds it up to
//     whole seconds for Retry-After (RFC 9110 section 10.2.3), so a client
//     that waits that long is admitted; Decision.RetryAfter(W) answers W
//     itself (60 s for a minute) on every refusal, which is as true: a client
//     that waits a whole window after a refusal, sending nothing since, is
//     always admitted.
//   - Times are whole milliseconds, rounded down (Redis's TIME in
//     microseconds, an injected clock's time.Time), the same way for the
//     refusal and for the request that follows it, so the same instant W
//     later is never counted as earlier than W.
//   - When admitted, Decision.Wait is the time until the oldest counted
//     bucket leaves, freeing its place (the RateLimit-Reset of the IETF
//     httpapi rate-limit headers draft, Decision.Reset), and
//     Decision.Remaining(N) is how many more the window admits now. On a
//     refusal Decision.Reset equals Decision.RetryAfter, so the two headers
//     never disagree.
//   - Time is the Redis server's (TIME) unless the caller injects one, one
//     clock for every replica; it never runs backwards for a key (an earlier
//     now counts as the latest admission's time).
//   - A subject's key is one string of 449 bytes whatever its limit (Redis's
//     MEMORY USAGE: at most 600 bytes, for a 100,000,000-a-minute subject
//     after 20,000 requests too), living until its newest request is W old,
//     so idle keys vanish.
//
// # What it costs, and why this structure
//
// Measured on the previous layout (4-byte counts, no newest time per bucket,
// which counted a bucket until its end was W old, so a refusal's wait could
// reach W+b) with BenchmarkAllow (a redis-server of its own, Redis 7.0.15, a
// 2-core machine shared with other work and heavily loaded at the time, so
// the figures move from run to run: compare within a run), Redis's own time
// per EVALSHA for a subject allowed 10,000,000 a minute, on the server's
// clock, over 20,000 requests (mean of the middle half of the SLOWLOG
// durations; INFO commandstats' usec_per_call, which counts preemption too,
// in brackets): a script returning a constant 1.9 us (3.7), the sliding log
// 19.9 us (34.3) with 2.5 MB of sorted set that grows with every admitted
// request, WindowLua 13.7 us (18.8) with 392 bytes; for a subject whose
// every request opens a new bucket, 11.1 us (17.0). The Go round trip
// (ns/op) is dominated by the network and the client.
//
// Its steady cost is TIME, GET and SET PX (SET KEEPTTL in the previous
// layout, within a bucket), plus reading the 22-byte header and one or two
// buckets with
// string.byte and writing them back with one string.char each. Other layouts
// were measured against it in the same runs (a throwaway harness timing each
// EVALSHA through the SLOWLOG) and dropped: the same ring as the fields of a
// hash (HMGET, HGET, HINCRBY, HSET, PEXPIRE: more commands, no cheaper);
// counters as decimal text (string.format and string.sub cost more than
// string.byte and string.char); the header built by joining small strings
// (three times the cost of one string.char); and per-bucket records carrying
// the total, written with SETRANGE (one 21-byte write per request instead of
// a 266-byte SET: under 1 us cheaper at a high rate, within the noise, but
// four commands when a bucket opens, which is every request of a client well
// under its limit, and a string five times larger). What remains is mostly
// the fixed price of a script: each redis.call costs about 1 us here.
// Redis's struct and cmsgpack libraries and BITFIELD would shorten the code,
// but miniredis, the in-process Redis, has none of them.
//
// The exact sliding log this package kept before (one sorted-set member per
// admitted request) is gone: its memory and Redis CPU grew with the
// traffic. The two structures live under different key types (a sorted
// set, a string), so pkg/clients counts under new key names ("rw" for
// "rl"): during a rolling deploy neither version fails on the other's keys
// (WRONGTYPE).
package ratelimit
