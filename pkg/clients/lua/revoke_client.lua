-- pkg/clients/lua/revoke_client.lua: end a client for good and raise its
-- generation, so every token it holds dies (Store.Revoke). After
-- change.lua, whose KEYS, ARGV and reply it has; ARGV[5] is unused.
local done, gen = change_begin()
if done then return done end
gen = redis.call('HINCRBY', KEYS[1], 'generation', 1)
redis.call('HSET', KEYS[1], 'status', 'revoked', 'revoked_at', ARGV[1], 'updated_at', ARGV[1])
return change_end('client.revoke', 'generation=' .. gen, gen)
