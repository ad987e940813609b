-- pkg/clients/lua/set_limit.lua: set one of a client's per-minute limits
-- (Store.SetRateLimit, SetTokenRateLimit). After change.lua, whose KEYS,
-- ARGV and reply it has; ARGV[5] is the limit, ARGV[6] its field:
-- 'rate_limit' (API requests) or 'token_rate_limit'.
local done, gen = change_begin()
if done then return done end
local field = ARGV[6]
if field ~= 'rate_limit' and field ~= 'token_rate_limit' then return redis.error_reply('set_limit.lua: unknown limit') end
redis.call('HSET', KEYS[1], field, ARGV[5], 'updated_at', ARGV[1])
return change_end('client.' .. field, field .. '_per_minute=' .. ARGV[5], gen)
