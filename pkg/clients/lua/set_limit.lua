-- pkg/clients/lua/set_limit.lua: set one of a client's per-minute limits
-- (Store.SetRateLimit, SetTokenRateLimit). After change.lua, whose KEYS,
-- ARGV and reply it has; a_value is the limit, a_field its field:
-- 'rate_limit' (API requests) or 'token_rate_limit'.
local done, gen = change_begin()
if done then return done end
local field = a_field
if field ~= 'rate_limit' and field ~= 'token_rate_limit' then return redis.error_reply('set_limit.lua: unknown limit') end
redis.call('HSET', k_client, field, a_value, 'updated_at', a_at)
return change_end('client.' .. field, field .. '_per_minute=' .. a_value, gen)
