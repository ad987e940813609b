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

// limiterContract is testdata/limiter.lua's (go generate writes its
// section and limiter_gen_test.go).
var limiterContract = luascript.Contract{
	Script: "testdata/limiter.lua", Go: "limiter", Doc: "window_limit on its own",
	Keys: []luascript.Param{{Name: "window", Doc: "the window's key"}},
	Args: []luascript.Param{
		{Name: "limit", Type: "int", Doc: "requests per window"},
		{Name: "window_ms", Type: "int", Doc: "the window"},
		{Name: "now_ms", Type: "int", Doc: "the clock; -1 the Redis clock"},
	},
	Reply: []luascript.Param{
		{Name: "allowed", Type: "int", Doc: "WL_ALLOWED or WL_REFUSED"},
		{Name: "count", Type: "int", Doc: "requests counted"},
		{Name: "wait_ms", Type: "int", Doc: "the wait"},
	},
}

// LimiterScript is testdata/limiter.lua after window.lua (limiterContract).
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
	keys := limiterKeys{Window: key}
	args := limiterArgs{Limit: l.limit, WindowMS: l.window.Milliseconds(), NowMS: NowArg(l.now)}
	res, err := LimiterScript.Run(ctx, l.rdb, keys.list(), args.list()...).Result()
	var r limiterReply
	if err == nil {
		err = r.decode(res)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("rate limit %s: %w", key, err)
	}
	return FromScript(r.Allowed, r.Count, r.WaitMS), nil
}
