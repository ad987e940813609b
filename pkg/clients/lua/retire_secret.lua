-- pkg/clients/lua/retire_secret.lua: take one of a client's two secrets
-- away (Store.RetireSecret); CONFLICT when it is the only one,
-- NO_SUCH_SECRET when the client holds no such secret. After change.lua,
-- whose KEYS, ARGV and reply it has; a_value is the secret's id.
local done, gen, keyed = change_begin()
if done then return done end
if keyed then return reply(WRONG_METHOD, gen) end
local st = redis.call('HMGET', k_client, 'secret_id', 'secret2_id', 'secret2_digest', 'secret2_at')
if a_value == st[2] then
  redis.call('HDEL', k_client, 'secret2_digest', 'secret2_id', 'secret2_at')
elseif a_value == (st[1] or '1') then
  if not st[2] then return reply(CONFLICT, gen) end
  redis.call('HSET', k_client, 'secret_digest', st[3], 'secret_id', st[2], 'secret_at', st[4])
  redis.call('HDEL', k_client, 'secret2_digest', 'secret2_id', 'secret2_at')
else
  return reply(NO_SUCH_SECRET, gen)
end
redis.call('HSET', k_client, 'updated_at', a_at)
return change_end('client.retire_secret', 'secret_id=' .. a_value, gen)
