-- pkg/ratelimit/testdata/limiter.lua: window_limit on its own, for this
-- package's tests (limiter_test.go, Limiter); composed after window.lua.
-- Its KEYS, ARGV and reply are its contract (limiterContract in
-- limiter_test.go): the section below is generated from it.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "limiter" in limiter_test.go; its Go side is in limiter_gen_test.go.)
local k_window = KEYS[1] -- the window's key
local a_limit = ARGV[1] -- requests per window
local a_window_ms = ARGV[2] -- the window
local a_now_ms = ARGV[3] -- the clock; -1 the Redis clock
-- The reply, always 3 values, is built by reply, whose calls package
-- luascript inlines (a field not given, or nil, is 0 or ''):
--   {allowed, count, wait_ms}
local function reply(allowed, count, wait_ms) return {allowed or 0, count or 0, wait_ms or 0} end -- luacontract:inline
-- luacontract end
local a, c, w = window_limit(k_window, tonumber(a_limit), tonumber(a_window_ms), tonumber(a_now_ms))
return reply(a, c, w)
