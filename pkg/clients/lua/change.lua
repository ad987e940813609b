-- pkg/clients/lua/change.lua: a library, the first file of every script
-- that changes an existing client (rotate_secret.lua, add_secret.lua,
-- retire_secret.lua, rotate_keys.lua, revoke_client.lua, set_limit.lua, set_dpop.lua;
-- composed by package luascript, which maps error lines to the files).
--
-- KEYS (every change script): 1 the client record, 2 its audit list, 3 the
-- nonce of its last change (kept five minutes), 4 its public keys
-- (rotate_keys.lua only; the others pass it unused).
-- ARGV (every change script): 1 at (ms), 2 the audit list's cap, 3 this
-- change's nonce, 4 the actor's audit fields (audit.LineActor), 5 the
-- change's value (a digest, a secret id, a key set, a limit, a flag; '' for none),
-- 6 the limit's field (set_limit.lua only).
--
-- Reply of every change script: {code, generation} (changeReply). The same
-- change run again (its nonce: a retry after a broken connection) answers
-- CHANGED with the generation and changes nothing, so a rotation is never
-- made twice with two secrets.
local CHANGED, NOT_FOUND, REVOKED, WRONG_METHOD, CONFLICT, NO_SUCH_SECRET = 1, 0, -1, -2, -3, -4

-- change_begin checks that the client exists and is active; it returns the
-- reply to answer at once (a repeat, or a refusal), else nil, the
-- generation and whether the client authenticates with keys.
local function change_begin()
  if redis.call('EXISTS', KEYS[1]) == 0 then return {NOT_FOUND, 0} end
  local gen = tonumber(redis.call('HGET', KEYS[1], 'generation'))
  if redis.call('GET', KEYS[3]) == ARGV[3] then return {CHANGED, gen} end
  if redis.call('HGET', KEYS[1], 'status') ~= 'active' then return {REVOKED, gen} end
  return nil, gen, redis.call('HGET', KEYS[1], 'auth_method') == 'private_key_jwt'
end

-- change_end keeps the nonce and appends the audit line (audit.Record.Line:
-- at, event, detail, the actor's fields).
local function change_end(event, detail, gen)
  redis.call('SET', KEYS[3], ARGV[3], 'PX', 300000)
  redis.call('RPUSH', KEYS[2], ARGV[1] .. '\t' .. event .. '\t' .. detail .. ARGV[4])
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[2]), -1)
  return {CHANGED, gen}
end

-- next_secret_id numbers a new secret: secret_seq, or (a record written
-- before secrets had ids) the one after secret 1.
local function next_secret_id()
  local seq = redis.call('HGET', KEYS[1], 'secret_seq') or redis.call('HGET', KEYS[1], 'secret_id') or '1'
  return tonumber(seq) + 1
end
