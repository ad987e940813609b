-- pkg/clients/lua/rotate_secret.lua: give a secret client a new secret, in
-- place of both it holds, and raise its generation (Store.RotateSecret).
-- After change.lua, whose KEYS, ARGV and reply it has; a_value is the new
-- secret's digest (raw).
local done, gen, keyed = change_begin()
if done then return done end
if keyed then return reply(WRONG_METHOD, gen) end
local at = a_at
gen = redis.call('HINCRBY', k_client, 'generation', 1)
local sid = next_secret_id()
redis.call('HSET', k_client, 'secret_digest', a_value, 'secret_id', sid, 'secret_seq', sid, 'secret_at', at,
  'rotated_at', at, 'updated_at', at)
redis.call('HDEL', k_client, 'secret2_digest', 'secret2_id', 'secret2_at')
return change_end('client.rotate', 'generation=' .. gen .. ' secret_id=' .. sid, gen)
