-- pkg/clients/lua/create_org.lua: create an organisation's record and its
-- first audit entry in one step, or nothing if the slug is taken
-- (Store.CreateOrg). A retry of the same creation (known by its nonce:
-- after a broken connection) is CREATED and writes nothing.
--
-- Its KEYS, ARGV and codes are its contract (the contract "createOrg" in
-- pkg/clients/contracts.go): the section below is generated from it.
-- Both keys are under the organisation's hash tag.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "createOrg" in contracts.go; its Go side is in contracts_gen.go.)
local k_org = KEYS[1] -- the record
local k_audit = KEYS[2] -- its audit stream
local a_slug = ARGV[1] -- the organisation's slug
local a_name = ARGV[2] -- its name
local a_environment = ARGV[3] -- its environment
local a_created_at = ARGV[4] -- its creation time (RFC 3339)
local a_audit_cap = ARGV[5] -- the audit stream's cap
local a_nonce = ARGV[6] -- a nonce kept in the record
local a_entry = {unpack(ARGV, 7)} -- the audit entry's field-value pairs (audit.Record.Fields)
local TAKEN = 0 -- the slug is taken
local CREATED = 1 -- created (or the same creation, by its nonce, made before)
-- The reply: code, a single value.
-- luacontract end

if redis.call('EXISTS', k_org) == 1 then
  if redis.call('HGET', k_org, 'nonce') == a_nonce then return CREATED end
  return TAKEN
end
redis.call('HSET', k_org, 'slug', a_slug, 'name', a_name, 'environment', a_environment, 'created_at', a_created_at,
  'nonce', a_nonce)
redis.call('XADD', k_audit, 'MAXLEN', '~', a_audit_cap, '*', unpack(a_entry))
return CREATED
