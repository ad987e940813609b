-- pkg/clients/lua/admit.lua: one API request made with an access token (GET /api/v1/me/,
-- the admin API), in one round trip (admit.go, Store.AdmitAPI). Composed
-- after pkg/ratelimit/window.lua (scripts.go; errors name both files).
--
-- KEYS (under the client's hash tag): 1 the client record, 2 its API log,
-- 3 the token's revocation mark, and, for a DPoP-bound token only, 4 its
-- proof's replay mark (RFC 9449 section 11.1; absent for a bearer token,
-- which pays nothing for it).
-- ARGV: 1 the token's credential generation, 2 now_ms (0: the Redis
-- clock), 3 window_ms, 4 the id of the secret the token came from, 5 the
-- token's exp (s), and with KEYS[4] 6 the replay mark's lifetime (ms).
--
-- Reply: {DEAD} when the client is not active at that generation, the
-- secret was retired or the token revoked (RFC 7009); {REPLAYED} when the
-- proof's mark already existed (the request is not counted); otherwise
-- {ADMITTED or LIMITED, count, wait_ms, limit, name, audience, org_name,
-- org_slug, environment}. Codes (admit.go names them Dead, Admitted,
-- Limited and Replayed):
local DEAD, ADMITTED, LIMITED, REPLAYED = 0, 1, 2, 3

local st = redis.call('HMGET', KEYS[1], 'status', 'generation', 'rate_limit', 'name', 'audience', 'org_name',
  'org_slug', 'environment', 'secret_id', 'secret2_id', 'revoked_until')
if st[1] ~= 'active' or st[2] ~= ARGV[1] then return {DEAD} end
if ARGV[4] ~= (st[9] or '1') and ARGV[4] ~= st[10] then return {DEAD} end
-- A revoked token's mark is looked up only when the client has revoked a
-- token that expires no earlier than this one (revoked_until: the latest
-- exp of its revoked tokens): most clients never revoke, and a token
-- expiring later than every revoked one cannot be one of them.
local ru = tonumber(st[11])
if ru and tonumber(ARGV[5]) <= ru and redis.call('EXISTS', KEYS[3]) == 1 then return {DEAD} end
if KEYS[4] and not redis.call('SET', KEYS[4], 1, 'NX', 'PX', ARGV[6]) then return {REPLAYED} end
local limit = tonumber(st[3]) or 120
local a, c, w = window_limit(KEYS[2], limit, tonumber(ARGV[3]), tonumber(ARGV[2]))
local code = LIMITED
if a == 1 then code = ADMITTED end
return {code, c, w, limit, st[4], st[5], st[6], st[7], st[8]}
