-- pkg/clients/lua/add_secret.lua: give a secret client a second secret
-- (Store.AddSecret); CONFLICT when it holds two already. After change.lua,
-- whose KEYS, ARGV and reply it has; a_value is the new secret's digest
-- (raw).
local done, gen, keyed = change_begin()
if done then return done end
if keyed then return reply(WRONG_METHOD, gen) end
if redis.call('HEXISTS', k_client, 'secret2_digest') == 1 then return reply(CONFLICT, gen) end
local sid = next_secret_id()
redis.call('HSET', k_client, 'secret2_digest', a_value, 'secret2_id', sid, 'secret_seq', sid, 'secret2_at', a_at,
  'updated_at', a_at)
return change_end('client.add_secret', 'secret_id=' .. sid, gen)
