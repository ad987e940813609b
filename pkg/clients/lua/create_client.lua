-- pkg/clients/lua/create_client.lua: write a whole client record, its
-- first audit entry and (private_key_jwt) its public keys, or nothing if
-- the id exists (Store.CreateClient).
--
-- KEYS (under the client's hash tag): 1 the record, 2 its audit list, 3
-- its public keys.
-- ARGV: 1 n, 2..1+2n n field-value pairs of the record, 2+2n the audit
-- line (audit.Record.Line), 3+2n the audit list's cap, 4+2n the keys (''
-- for a secret client).
--
-- Reply: 1 created (or the same creation run again, known by its secret
-- digest or creation nonce: a retry after a broken connection writes
-- nothing), 0 the id exists.
local n = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[1]) == 1 then
  for i = 2, 1 + 2 * n, 2 do
    if ARGV[i] == 'secret_digest' or ARGV[i] == 'create_nonce' then
      if redis.call('HGET', KEYS[1], ARGV[i]) == ARGV[i + 1] then return 1 end
    end
  end
  return 0
end
local fields = {}
for i = 2, 1 + 2 * n do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
if ARGV[4 + 2 * n] ~= '' then redis.call('SET', KEYS[3], ARGV[4 + 2 * n]) end
redis.call('RPUSH', KEYS[2], ARGV[2 + 2 * n])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3 + 2 * n]), -1)
return 1
