package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// SlidingLogLua defines the Lua function
//
//	sliding_log(key, limit, window_ms, now_ms, member) -> allowed, count, wait_ms
//
// It drops entries older than the window, admits the request when fewer than
// limit remain (adding member at now_ms), and refreshes the key's TTL to the
// window so that idle keys expire. count is the number of admitted requests in
// the window including this one when allowed; wait_ms is how long until the
// oldest entry leaves the window (0 when allowed). now_ms < 0 means "use the
// Redis server's clock", one clock for every replica.
//
// Deprecated: its memory and Redis CPU grow with the limit and the traffic
// (one sorted-set member per admitted request); use WindowLua. Kept while
// pkg/clients still embeds it.
const SlidingLogLua = `
local function now_millis(now_ms)
  if now_ms >= 0 then return now_ms end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function sliding_log(key, limit, window_ms, now_ms, member)
  now_ms = now_millis(now_ms)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms - window_ms)
  local count = redis.call('ZCARD', key)
  if count < limit then
    redis.call('ZADD', key, now_ms, member)
    redis.call('PEXPIRE', key, window_ms)
    local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
    return 1, count + 1, tonumber(oldest[2]) + window_ms - now_ms
  end
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local wait = window_ms
  if oldest[2] then wait = tonumber(oldest[2]) + window_ms - now_ms end
  if wait < 1 then wait = 1 end
  return 0, count, wait
end
`

// Decision is the outcome of one counted request.
type Decision struct {
	Allowed bool
	// Count is the number of admitted requests counted now (see the package
	// documentation), including this one when allowed.
	Count int64
	// Wait is, when refused, how long until a request would be admitted
	// (with nothing admitted in between); when allowed, how long until the
	// oldest counted request leaves the count (the window's reset).
	Wait time.Duration
}

// Remaining is how many more requests the window admits.
func (d Decision) Remaining(limit int64) int64 {
	if r := limit - d.Count; r > 0 {
		return r
	}
	return 0
}

// RetryAfterSeconds rounds Wait up to whole seconds, at least 1, for a
// Retry-After header (RFC 9110 section 10.2.3).
func (d Decision) RetryAfterSeconds() int64 {
	s := int64((d.Wait + time.Second - 1) / time.Second)
	if s < 1 {
		return 1
	}
	return s
}

// FromScript reads the three values the Lua function returns.
func FromScript(allowed, count, waitMS int64) Decision {
	return Decision{Allowed: allowed == 1, Count: count, Wait: time.Duration(waitMS) * time.Millisecond}
}

// NowArg is the now_ms argument for a script: the injected clock's time in
// milliseconds, or -1 (the Redis server's clock) when now is nil.
func NowArg(now func() time.Time) int64 {
	if now == nil {
		return -1
	}
	return now().UnixMilli()
}

// Member returns a unique sorted-set member for one request of
// SlidingLogLua.
//
// Deprecated: WindowLua needs no member.
func Member() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b[:])
}

var limiterScript = redis.NewScript(WindowLua + `
local a, c, w = window_limit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
return {a, c, w}
`)

// Limiter admits at most limit requests per key in any window-long interval,
// with WindowLua (so it may refuse up to one bucket, window/60, early).
type Limiter struct {
	rdb    redis.Scripter
	limit  int64
	window time.Duration
	now    func() time.Time
}

// NewLimiter returns a Limiter. now is the clock (nil: the Redis server's).
func NewLimiter(rdb redis.Scripter, limit int64, window time.Duration, now func() time.Time) *Limiter {
	return &Limiter{rdb: rdb, limit: limit, window: window, now: now}
}

// Allow counts one request against key.
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	res, err := limiterScript.Run(ctx, l.rdb, []string{key}, l.limit, l.window.Milliseconds(), NowArg(l.now)).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit %s: %w", key, err)
	}
	if len(res) != 3 {
		return Decision{}, fmt.Errorf("rate limit %s: unexpected reply %v", key, res)
	}
	return FromScript(res[0], res[1], res[2]), nil
}
