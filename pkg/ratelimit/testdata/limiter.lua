-- pkg/ratelimit/testdata/limiter.lua: window_limit on its own, for this
-- package's tests (limiter_test.go, Limiter); composed after window.lua.
--
-- KEYS: 1 the window's key.
-- ARGV: 1 limit, 2 window_ms, 3 now_ms (-1: the Redis clock).
-- Reply: {allowed, count, wait_ms}.
local a, c, w = window_limit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
return {a, c, w}
