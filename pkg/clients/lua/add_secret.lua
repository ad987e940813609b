-- pkg/clients/lua/add_secret.lua: give a secret client a second secret
-- (Store.AddSecret); CONFLICT when it holds two already. After change.lua,
-- whose KEYS, ARGV and reply it has; ARGV[5] is the new secret's digest
-- (raw).
local done, gen, keyed = change_begin()
if done then return done end
if keyed then return {WRONG_METHOD, gen} end
if redis.call('HEXISTS', KEYS[1], 'secret2_digest') == 1 then return {CONFLICT, gen} end
local sid = next_secret_id()
redis.call('HSET', KEYS[1], 'secret2_digest', ARGV[5], 'secret2_id', sid, 'secret_seq', sid, 'secret2_at', ARGV[1],
  'updated_at', ARGV[1])
return change_end('client.add_secret', 'secret_id=' .. sid, gen)
