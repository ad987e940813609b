package ratelimit

// Limiter runs WindowLua on its own for plain keys. Production code embeds
// WindowLua in its own scripts (pkg/clients checks a client's state and
// counts in one round trip), so only this package's tests need it: it is
// exported to them from here.

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/luascript"
)

//go:embed testdata/limiter.lua
var limiterLua string

// LimiterScript is testdata/limiter.lua after window.lua: window_limit of
// KEYS[1] with ARGV limit, window_ms, now_ms; reply {allowed, count,
// wait_ms}.
var LimiterScript = luascript.New(WindowFile, luascript.File{Name: "pkg/ratelimit/testdata/limiter.lua", Text: limiterLua})

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
	res, err := LimiterScript.Run(ctx, l.rdb, []string{key}, l.limit, l.window.Milliseconds(), NowArg(l.now)).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit %s: %w", key, err)
	}
	if len(res) != 3 {
		return Decision{}, fmt.Errorf("rate limit %s: unexpected reply %v", key, res)
	}
	return FromScript(res[0], res[1], res[2]), nil
}
