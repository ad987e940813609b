-- pkg/clients/lua/rotate_keys.lua: replace a private_key_jwt (or
-- self_signed_tls_client_auth) client's
-- public keys and raise its generation (Store.RotateKeys). After
-- change.lua, whose KEYS, ARGV and reply it has; k_public_keys is the client's
-- keys, a_value the new key set (the JSON of ClientKeySource.blob).
local done, gen, _, keyed = change_begin()
if done then return done end
if not keyed then return reply(WRONG_METHOD, gen) end
gen = redis.call('HINCRBY', k_client, 'generation', 1)
redis.call('HINCRBY', k_client, 'keys_version', 1)
redis.call('SET', k_public_keys, a_value)
-- The record names the URL of keys fetched from one (Client.JWKSURI).
local ok, blob = pcall(cjson.decode, a_value)
if ok and type(blob) == 'table' and type(blob.jwks_uri) == 'string' then
  redis.call('HSET', k_client, 'jwks_uri', blob.jwks_uri)
else
  redis.call('HDEL', k_client, 'jwks_uri')
end
redis.call('HSET', k_client, 'rotated_at', a_at, 'updated_at', a_at)
return change_end('client.rotate_keys', 'generation=' .. gen, gen)
