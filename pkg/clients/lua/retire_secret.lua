-- pkg/clients/lua/retire_secret.lua: take one of a client's two secrets
-- away (Store.RetireSecret); CONFLICT when it is the only one,
-- NO_SUCH_SECRET when the client holds no such secret. After change.lua,
-- whose KEYS, ARGV and reply it has; ARGV[5] is the secret's id.
local done, gen, keyed = change_begin()
if done then return done end
if keyed then return {WRONG_METHOD, gen} end
local st = redis.call('HMGET', KEYS[1], 'secret_id', 'secret2_id', 'secret2_digest', 'secret2_at')
if ARGV[5] == st[2] then
  redis.call('HDEL', KEYS[1], 'secret2_digest', 'secret2_id', 'secret2_at')
elseif ARGV[5] == (st[1] or '1') then
  if not st[2] then return {CONFLICT, gen} end
  redis.call('HSET', KEYS[1], 'secret_digest', st[3], 'secret_id', st[2], 'secret_at', st[4])
  redis.call('HDEL', KEYS[1], 'secret2_digest', 'secret2_id', 'secret2_at')
else
  return {NO_SUCH_SECRET, gen}
end
redis.call('HSET', KEYS[1], 'updated_at', ARGV[1])
return change_end('client.retire_secret', 'secret_id=' .. ARGV[5], gen)
