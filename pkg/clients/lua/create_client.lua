-- pkg/clients/lua/create_client.lua: write a whole client record, its
-- first audit entry and (private_key_jwt) its public keys, or nothing if
-- the id exists (Store.CreateClient). A retry of the same creation (known
-- by its secret digest or creation nonce: after a broken connection) is
-- CREATED and writes nothing.
--
-- Its KEYS, ARGV and codes are its contract (the contract "createClient" in
-- pkg/clients/contracts.go): the section below is generated from it.
-- Every key is under the client's hash tag.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "createClient" in contracts.go; its Go side is in contracts_gen.go.)
local k_client = KEYS[1] -- the record
local k_audit = KEYS[2] -- its audit list
local k_public_keys = KEYS[3] -- its public keys (or tls_client_auth subject)
local a_audit_line = ARGV[1] -- the first audit line (audit.Record.Line)
local a_audit_cap = ARGV[2] -- the audit list's cap
local a_key_set = ARGV[3] -- the public keys, or a tls_client_auth client's subject ('' for a secret client)
local a_fields = {unpack(ARGV, 4)} -- the record's field-value pairs
local EXISTS = 0 -- the id exists
local CREATED = 1 -- created (or the same creation, by its secret digest or nonce, made before)
-- The reply: code, a single value.
-- luacontract end

if redis.call('EXISTS', k_client) == 1 then
  for i = 1, #a_fields, 2 do
    if a_fields[i] == 'secret_digest' or a_fields[i] == 'create_nonce' then
      if redis.call('HGET', k_client, a_fields[i]) == a_fields[i + 1] then return CREATED end
    end
  end
  return EXISTS
end
redis.call('HSET', k_client, unpack(a_fields))
if a_key_set ~= '' then redis.call('SET', k_public_keys, a_key_set) end
redis.call('RPUSH', k_audit, a_audit_line)
redis.call('LTRIM', k_audit, -tonumber(a_audit_cap), -1)
return CREATED
