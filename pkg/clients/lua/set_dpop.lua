-- pkg/clients/lua/set_dpop.lua: set or clear a client's
-- dpop_bound_access_tokens (RFC 9449 section 5.2; Store.SetDPoPBound).
-- After change.lua, whose KEYS, ARGV and reply it has; a_value is '1'
-- (bound) or '0'.
local done, gen = change_begin()
if done then return done end
if a_value == '1' then
  redis.call('HSET', k_client, 'dpop_bound', '1', 'updated_at', a_at)
elseif a_value == '0' then
  redis.call('HDEL', k_client, 'dpop_bound')
  redis.call('HSET', k_client, 'updated_at', a_at)
else
  return redis.error_reply('set_dpop.lua: want 1 or 0')
end
local v = 'false'
if a_value == '1' then v = 'true' end
return change_end('client.dpop_bound', 'dpop_bound=' .. v, gen)
