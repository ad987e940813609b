-- pkg/clients/lua/set_dpop.lua: set or clear a client's
-- dpop_bound_access_tokens (RFC 9449 section 5.2; Store.SetDPoPBound).
-- After change.lua, whose KEYS, ARGV and reply it has; ARGV[5] is '1'
-- (bound) or '0'.
local done, gen = change_begin()
if done then return done end
if ARGV[5] == '1' then
  redis.call('HSET', KEYS[1], 'dpop_bound', '1', 'updated_at', ARGV[1])
elseif ARGV[5] == '0' then
  redis.call('HDEL', KEYS[1], 'dpop_bound')
  redis.call('HSET', KEYS[1], 'updated_at', ARGV[1])
else
  return redis.error_reply('set_dpop.lua: want 1 or 0')
end
local v = 'false'
if ARGV[5] == '1' then v = 'true' end
return change_end('client.dpop_bound', 'dpop_bound=' .. v, gen)
