-- pkg/clients/lua/change.lua: a library, the first file of every script
-- that changes an existing client (rotate_secret.lua, add_secret.lua,
-- retire_secret.lua, rotate_keys.lua, revoke_client.lua, set_limit.lua, set_dpop.lua;
-- composed by package luascript, which maps error lines to the files).
--
-- Its KEYS, ARGV, reply and codes, every change script's, are its
-- contract (the contract "change" in pkg/clients/contracts.go; Go's side:
-- changeKeys, changeArgs, changeReply, changeCode): the section below is
-- generated from it, and the change scripts composed after this file use
-- its names. The same change run again (its nonce: a retry after a broken
-- connection) answers CHANGED with the generation and changes nothing, so
-- a rotation is never made twice with two secrets.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "change" in contracts.go; its Go side is in contracts_gen.go.)
local k_client = KEYS[1] -- the client record
local k_audit = KEYS[2] -- its audit list
local k_nonce = KEYS[3] -- the nonce of its last change (kept five minutes)
local k_public_keys = KEYS[4] -- its public keys or certificate name (rotate_keys.lua; unused by the others)
local a_at = ARGV[1] -- the change's time (ms)
local a_audit_cap = ARGV[2] -- the audit list's cap
local a_nonce = ARGV[3] -- this change's nonce
local a_actor = ARGV[4] -- the actor's audit fields (audit.LineActor)
local a_value = ARGV[5] -- the change's value: a digest, a secret id, a key set or certificate name, a limit, a flag ('' for none)
local a_field = ARGV[6] -- the limit's field (set_limit.lua); 'tls_subject' when the value is a certificate name (rotate_keys.lua) (optional: nil when not sent)
local NOT_FOUND = 0 -- no such client
local CHANGED = 1 -- changed (or the same change, by its nonce, made before)
local REVOKED = -1 -- the client is revoked
local WRONG_METHOD = -2 -- not for the client's authentication method
local CONFLICT = -3 -- two secrets already, or the only one
local NO_SUCH_SECRET = -4 -- the client holds no such secret
-- The reply, always 2 values, is built by reply, whose calls package
-- luascript inlines (a field not given, or nil, is 0 or ''):
--   {code, generation}
local function reply(code, generation) return {code, generation or 0} end -- luacontract:inline
-- luacontract end

-- change_begin checks that the client exists and is active; it returns the
-- reply to answer at once (a repeat, or a refusal), else nil, the
-- generation, whether the client has no secret (it authenticates with
-- keys or a certificate) and whether it has public keys (private_key_jwt,
-- self_signed_tls_client_auth: rotate_keys.lua replaces them).
local function change_begin()
  if redis.call('EXISTS', k_client) == 0 then return reply(NOT_FOUND, 0) end
  local gen = tonumber(redis.call('HGET', k_client, 'generation'))
  if redis.call('GET', k_nonce) == a_nonce then return reply(CHANGED, gen) end
  if redis.call('HGET', k_client, 'status') ~= 'active' then return reply(REVOKED, gen) end
  local m = redis.call('HGET', k_client, 'auth_method')
  local secretless = m ~= false and m ~= 'client_secret'
  return nil, gen, secretless, m == 'private_key_jwt' or m == 'self_signed_tls_client_auth'
end

-- change_end keeps the nonce and appends the audit line (audit.Record.Line:
-- at, event, detail, the actor's fields).
local function change_end(event, detail, gen)
  redis.call('SET', k_nonce, a_nonce, 'PX', 300000)
  redis.call('RPUSH', k_audit, a_at .. '\t' .. event .. '\t' .. detail .. a_actor)
  redis.call('LTRIM', k_audit, -tonumber(a_audit_cap), -1)
  return reply(CHANGED, gen)
end

-- next_secret_id numbers a new secret: secret_seq, or (a record written
-- before secrets had ids) the one after secret 1.
local function next_secret_id()
  local seq = redis.call('HGET', k_client, 'secret_seq') or redis.call('HGET', k_client, 'secret_id') or '1'
  return tonumber(seq) + 1
end
