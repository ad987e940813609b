-- pkg/clients/lua/revoke_client.lua: end a client for good and raise its
-- generation, so every token it holds dies (Store.Revoke). After
-- change.lua, whose KEYS, ARGV and reply it has; a_value is unused.
local done, gen = change_begin()
if done then return done end
gen = redis.call('HINCRBY', k_client, 'generation', 1)
redis.call('HSET', k_client, 'status', 'revoked', 'revoked_at', a_at, 'updated_at', a_at)
return change_end('client.revoke', 'generation=' .. gen, gen)
