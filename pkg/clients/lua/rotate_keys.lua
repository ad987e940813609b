-- pkg/clients/lua/rotate_keys.lua: replace a private_key_jwt client's
-- public keys and raise its generation (Store.RotateKeys). After
-- change.lua, whose KEYS, ARGV and reply it has; KEYS[4] is the client's
-- keys, ARGV[5] the new key set (the JSON of ClientKeySource.blob).
local done, gen, keyed = change_begin()
if done then return done end
if not keyed then return {WRONG_METHOD, gen} end
gen = redis.call('HINCRBY', KEYS[1], 'generation', 1)
redis.call('HINCRBY', KEYS[1], 'keys_version', 1)
redis.call('SET', KEYS[4], ARGV[5])
-- The record names the URL of keys fetched from one (Client.JWKSURI).
local ok, blob = pcall(cjson.decode, ARGV[5])
if ok and type(blob) == 'table' and type(blob.jwks_uri) == 'string' then
  redis.call('HSET', KEYS[1], 'jwks_uri', blob.jwks_uri)
else
  redis.call('HDEL', KEYS[1], 'jwks_uri')
end
redis.call('HSET', KEYS[1], 'rotated_at', ARGV[1], 'updated_at', ARGV[1])
return change_end('client.rotate_keys', 'generation=' .. gen, gen)
