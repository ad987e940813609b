package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

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
