package ratelimit

import (
	_ "embed"

	"github.com/partnerapi/authplatform/pkg/luascript"
)

// Buckets is the number of sub-windows a window is cut into: a bucket is
// ceil(window/Buckets) long (1 s for a minute), and the ring holds
// Buckets+1 of them, enough for every bucket a window-long interval touches.
const Buckets = 60

// WindowLua defines the Lua function
//
//	window_limit(key, limit, window_ms, now_ms) -> allowed, count, wait_ms
//
// It counts admitted requests in a ring of Buckets+1 per-bucket counters kept
// in one string at key (a header, then 4 bytes per bucket: 266 bytes whatever
// the limit or the traffic), with a running total, and admits the request
// when fewer than limit lie in the buckets that overlap the last window_ms
// milliseconds; the oldest, partial bucket counts in full, so the limiter may
// refuse up to one bucket early but never admits more than limit in any
// window-long interval (see the package documentation).
//
// allowed is 1 or 0; count is the number of admitted requests counted now,
// including this one when allowed; wait_ms is, when refused, the time until a
// request would be admitted (with nothing admitted in between), and when
// allowed, the time until the oldest counted request leaves the count (the
// window's reset). now_ms < 0 means "use the Redis server's clock" (TIME), one
// clock for every replica; a now_ms earlier than the latest admitted one
// counts as that one, so a key's time never runs backwards. The key's TTL is
// refreshed on every admission to when its newest bucket leaves the window,
// so idle keys vanish. The function touches only key. A change of window_ms
// for a key carries its whole count into the current bucket (never admitting
// too many). A limit above 2^32-1 counts as 2^32-1. It needs Redis 6.0 or
// later (SET KEEPTTL).
//
// The string is encoded by hand (big-endian, string.byte/string.char) because
// Redis's struct library is missing from miniredis, the in-process Redis.
//
// Its text is window.lua; WindowFile composes it before a script's own file
// (package luascript), so Redis's error line numbers name the file.
//
//go:embed window.lua
var WindowLua string

// WindowFile is window.lua as the first file of a composed script.
var WindowFile = luascript.File{Name: "pkg/ratelimit/window.lua", Text: WindowLua}
