-- pkg/clients/lua/admit.lua: one API request made with an access token (GET /api/v1/me/,
-- the admin API), in one round trip (admit.go, Store.AdmitAPI). Composed
-- after pkg/ratelimit/window.lua (scripts.go; errors name both files).
--
-- Its KEYS, ARGV, reply and codes are its contract (the contract "admit" in
-- pkg/clients/contracts.go; Go's side: admitKeys, admitArgs, admitReply,
-- admitCode): the section below is generated from it. Every key is under
-- the client's hash tag. A bearer token sends no replay_mark (nor its
-- lifetime) and pays nothing for it. The reply is DEAD when the client is
-- not active at that generation, the secret was retired or the token
-- revoked (RFC 7009); REPLAYED when the proof's mark already existed (the
-- request is not counted); otherwise ADMITTED or LIMITED with the count
-- and what GET /api/v1/me/ shows.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "admit" in contracts.go; its Go side is in contracts_gen.go.)
local k_client = KEYS[1] -- the client record
local k_api_log = KEYS[2] -- its API requests' window
local k_revoked_mark = KEYS[3] -- the token's revocation mark
local k_replay_mark = KEYS[4] -- a DPoP-bound token's proof's replay mark (RFC 9449 section 11.1) (optional: nil when not sent)
local a_generation = ARGV[1] -- the token's credential generation
local a_now_ms = ARGV[2] -- the limit's clock; -1 the Redis clock
local a_window_ms = ARGV[3] -- the limit's window
local a_secret_id = ARGV[4] -- the secret the token came from
local a_exp = ARGV[5] -- the token's exp (s)
local a_replay_ttl_ms = ARGV[6] -- the replay mark's lifetime, with replay_mark (optional: nil when not sent)
local DEAD = 0 -- not active at that generation, the secret retired or the token revoked (RFC 7009)
local ADMITTED = 1 -- in good standing, under the limit
local LIMITED = 2 -- in good standing, over the limit
local REPLAYED = 3 -- the proof's mark existed: not counted
-- The reply, always 9 values, is built by reply, whose calls package
-- luascript inlines (a field not given, or nil, is 0 or ''):
--   {code, count, wait_ms, limit, name, audience, org_name, org_slug, environment}
local function reply(code, count, wait_ms, limit, name, audience, org_name, org_slug, environment) return {code, count or 0, wait_ms or 0, limit or 0, name or '', audience or '', org_name or '', org_slug or '', environment or ''} end -- luacontract:inline
-- luacontract end

local st = redis.call('HMGET', k_client, 'status', 'generation', 'rate_limit', 'name', 'audience', 'org_name',
  'org_slug', 'environment', 'secret_id', 'secret2_id', 'revoked_until')
if st[1] ~= 'active' or st[2] ~= a_generation then return reply(DEAD) end
if a_secret_id ~= (st[9] or '1') and a_secret_id ~= st[10] then return reply(DEAD) end
-- A revoked token's mark is looked up only when the client has revoked a
-- token that expires no earlier than this one (revoked_until: the latest
-- exp of its revoked tokens): most clients never revoke, and a token
-- expiring later than every revoked one cannot be one of them.
local ru = tonumber(st[11])
if ru and tonumber(a_exp) <= ru and redis.call('EXISTS', k_revoked_mark) == 1 then return reply(DEAD) end
if k_replay_mark and not redis.call('SET', k_replay_mark, 1, 'NX', 'PX', a_replay_ttl_ms) then return reply(REPLAYED) end
local limit = tonumber(st[3]) or 120
local a, c, w = window_limit(k_api_log, limit, tonumber(a_window_ms), tonumber(a_now_ms))
local code = LIMITED
if a == WL_ALLOWED then code = ADMITTED end
return reply(code, c, w, limit, st[4], st[5], st[6], st[7], st[8])
