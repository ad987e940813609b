-- pkg/clients/lua/rotate_keys.lua: replace a private_key_jwt (or
-- self_signed_tls_client_auth) client's public keys, or a tls_client_auth
-- client's certificate name, and raise its generation (Store.RotateKeys,
-- Store.RotateTLSSubject). After change.lua, whose KEYS, ARGV and reply it
-- has; k_public_keys is the client's keys, a_value the new key set (the
-- JSON of ClientKeySource.blob) or, when a_field is 'tls_subject', its new
-- certificate name (TLSSubject.blob).
local done, gen, secretless, keyed = change_begin()
if done then return done end
if a_field == 'tls_subject' then
  -- tls_client_auth: neither a secret nor keys.
  if not secretless or keyed then return reply(WRONG_METHOD, gen) end
elseif not keyed then
  return reply(WRONG_METHOD, gen)
end
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
