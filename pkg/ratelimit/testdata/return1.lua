-- pkg/ratelimit/testdata/return1.lua: the floor of one EVALSHA for
-- BenchmarkAllow: it answers as an admission would, and does nothing.
--
-- KEYS: 1 unused. ARGV: unused.
-- Reply: {1, 1, 60000}.
return {1, 1, 60000}
