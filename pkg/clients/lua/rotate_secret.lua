-- pkg/clients/lua/rotate_secret.lua: give a secret client a new secret, in
-- place of both it holds, and raise its generation (Store.RotateSecret).
-- After change.lua, whose KEYS, ARGV and reply it has; ARGV[5] is the new
-- secret's digest (raw).
local done, gen, keyed = change_begin()
if done then return done end
if keyed then return {WRONG_METHOD, gen} end
local at = ARGV[1]
gen = redis.call('HINCRBY', KEYS[1], 'generation', 1)
local sid = next_secret_id()
redis.call('HSET', KEYS[1], 'secret_digest', ARGV[5], 'secret_id', sid, 'secret_seq', sid, 'secret_at', at,
  'rotated_at', at, 'updated_at', at)
redis.call('HDEL', KEYS[1], 'secret2_digest', 'secret2_id', 'secret2_at')
return change_end('client.rotate', 'generation=' .. gen .. ' secret_id=' .. sid, gen)
