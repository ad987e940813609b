package ratelimit

// Limiter runs WindowLua on its own for plain keys. Production code embeds
// WindowLua in its own scripts (pkg/clients checks a client's state and
// counts in one round trip), so only this package's tests need it: it is
// exported to them from here.

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

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
