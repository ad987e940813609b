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
// It counts admitted requests in a ring of Buckets+1 buckets kept in one
// string at key (a header, then 7 bytes per bucket: its count and the time
// of its newest admission; 449 bytes whatever the limit or the traffic),
// with a running total, and admits the request when fewer than limit are
// counted. A bucket, and so every request in it, is counted until its newest
// admission is window_ms old: the limiter never admits more than limit in
// any window-long interval, may refuse up to one bucket early, and a request
// refused at now is admitted at now + window_ms at the latest (see the
// package documentation).
//
// allowed is WL_ALLOWED (1) or WL_REFUSED (0), codes of windowContract
// (contracts.go) defined in window.lua's generated section; count is the number of admitted requests counted now,
// including this one when allowed; wait_ms is, when refused, the time until a
// request would be admitted (with nothing admitted in between), at most
// window_ms; when allowed, the time until the oldest counted request leaves
// the count (the window's reset). now_ms < 0 means "use the Redis server's
// clock" (TIME), one clock for every replica; a now_ms earlier than the
// latest admitted one counts as that one, so a key's time never runs
// backwards. The key's TTL is set on every admission to window_ms, when its
// newest bucket leaves, so idle keys vanish. The function touches only key.
// A change of window_ms for a key, or a key in the previous layout (4-byte
// counts only), carries its whole count into the current bucket (never
// admitting too many). A limit above 2^32-1 counts as 2^32-1, a window_ms
// above 60*2^24 as 60*2^24 (buckets' offsets are 3 bytes).
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
