-- pkg/clients/lua/authenticate.lua: one client authentication on the token endpoint, on
-- introspection and on revocation, in one round trip (authenticate.go,
-- Store.Authenticate, documents the limits it keeps). Composed after
-- pkg/ratelimit/window.lua (wl_now, window_limit; scripts.go).
--
-- KEYS (all under the client's hash tag, so it runs on Cluster):
--   1 the client record            2 its token log
--   3 the presenting address's failure log for this client
--   4 the tags of the wrong credentials that address presented
--   5 the log of their repeats
--   6 the revocation mark of a token to check (introspection), else unused
--   7 the single-use mark of an assertion's jti (private_key_jwt), else unused
--   8 the single-use mark of a DPoP proof (RFC 9449 section 11.1), else unused
-- ARGV:
--   1 the secret's digest (raw)   2 the same, hex (records written before
--     digests were stored raw)     ('' for an assertion)
--   3 'token' or 'caller'         4 requested scope bits (-1: every scope
--     held, -2: a scope that cannot be granted)
--   5 now_ms (-1: the Redis clock) 6 window_ms   7 failure limit
--   8 the credential's failure tag               9 repeat limit
--   10 'secret' or 'assertion'    11 '1' when the assertion's signature and
--     claims verified against the keys of version 12   12 keys version
--   13 the jti mark's lifetime, ms (until the assertion's exp plus the
--     skew it is accepted with, plus a margin; not positive: refused)
--   14 the secret id of a token to check ('': none)  15 its exp (s)
--   16 the token request's DPoP proof (RFC 9449 section 5): '' none sent,
--     '0' sent but refused by the caller, '1' verified by the caller
--   17 the proof's mark's lifetime, ms (dpop.ReplayTTL)
--
-- Reply, always 9 integers: {code, generation, granted scope bits, token
-- count, wait_ms, token limit, repeated, secret id, token alive}. Codes
-- (named alike in authenticate.go, the reply* constants):
local UNKNOWN, BAD, TOO_MANY, BAD_SCOPE, TOKEN_LIMITED, OK, STALE_KEYS = 0, 1, 2, 3, 4, 5, 6
local PROOF_REQUIRED, PROOF_INVALID, PROOF_REPLAYED = 7, 8, 9

local function reply(code, gen, granted, count, wait, limit, repeated, sid, alive)
  return {code, gen or 0, granted or 0, count or 0, wait or 0, limit or 0, repeated or 0, sid or 0, alive or 0}
end

local function scope_bits(v)
  local n = tonumber(v)
  if n then return n end
  -- Records written before scopes were stored as a bit set.
  local names = {['programme.metrics.read'] = 1, ['events.subscribe'] = 2, ['patients.read'] = 4,
    ['referrals.write'] = 8, ['admin.read'] = 16, ['admin.write'] = 32}
  local bits = 0
  for w in string.gmatch(v or '', '%S+') do bits = bits + (names[w] or 0) end
  return bits
end

local st = redis.call('HMGET', KEYS[1], 'status', 'secret_digest', 'generation', 'scopes', 'token_rate_limit',
  'auth_method', 'keys_version', 'secret_id', 'secret2_digest', 'secret2_id', 'revoked_until', 'dpop_bound')
-- An unknown id takes the path of a wrong secret, failure accounting
-- included, so that the time of the answer does not tell which ids exist;
-- the keys it wrote are deleted before it returns (made-up ids leave
-- nothing behind).
local unknown = not st[3]
local keyed = st[6] == 'private_key_jwt'
local assertion = ARGV[10] == 'assertion'
-- The assertion was checked against keys older than the client's: the
-- caller reloads them and tries again (nothing was counted or written).
if assertion and keyed and st[7] ~= ARGV[12] then return reply(STALE_KEYS) end

-- One clock reading for the whole script, taken when first needed: the
-- failure accounting and the token limit need it, a caller that
-- authenticates for introspection or revocation does not, and its script
-- skips Redis's TIME (with the conversion of its reply, a ninth of that
-- script's instructions: deploy/bench/PROFILES.md, section 2026-11-28
-- 20:25-21:08 UTC).
local now_ms
local function now()
  if not now_ms then now_ms = wl_now(tonumber(ARGV[5])) end
  return now_ms
end
local window, flimit = tonumber(ARGV[6]), tonumber(ARGV[7])
-- The failure budget is looked at before the credential, so a spent budget
-- checks nothing; a failure is counted in the same script, so no burst gets
-- more than the budget checked. Without a failure log there is no tag.
local failures = 0
-- A tag counts while its own failure is less than a window old (that
-- failure's bucket then counts in the failure log too: package ratelimit's
-- window drops a bucket a window after its newest request).
local fb = math.floor((window + 59) / 60)
if redis.call('EXISTS', KEYS[3]) == 1 then
  local seen = tonumber(redis.call('HGET', KEYS[4], ARGV[8]))
  if seen and seen > now() - window then
    -- A credential whose failure still counts: not checked again, not a
    -- new guess; limited apart.
    local ok, _, rwait = window_limit(KEYS[5], tonumber(ARGV[9]), window, now())
    if ok == 0 then return reply(TOO_MANY, 0, 0, 0, rwait, 0, 1) end
    return reply(BAD, 0, 0, 0, 0, 0, 1)
  end
  local _, n = window_limit(KEYS[3], 0, window, now())
  failures = n
end
if failures >= flimit then
  local _, _, fwait = window_limit(KEYS[3], flimit, window, now())
  return reply(TOO_MANY, 0, 0, 0, fwait)
end

-- The credential. A secret matches either of the client's secrets (each
-- with its id, which the token records); an assertion counts once its
-- signature and claims verified (the caller did that) and its jti was not
-- used before (the mark lives until the assertion expires).
local sid = nil
if st[1] == 'active' then
  if assertion then
    if keyed and ARGV[11] == '1' and tonumber(ARGV[13]) > 0 and redis.call('SET', KEYS[7], '1', 'NX', 'PX', ARGV[13]) then
      sid = st[8] or '1'
    end
  elseif not keyed then
    if st[2] == ARGV[1] or st[2] == ARGV[2] then
      sid = st[8] or '1'
    elseif st[9] and st[9] == ARGV[1] then
      sid = st[10]
    end
  end
end
if not sid then
  window_limit(KEYS[3], flimit, window, now())
  if redis.call('HLEN', KEYS[4]) >= flimit then
    local tags = redis.call('HGETALL', KEYS[4])
    local old = now() - window
    for i = 1, #tags, 2 do
      if tonumber(tags[i + 1]) <= old then redis.call('HDEL', KEYS[4], tags[i]) end
    end
  end
  redis.call('HSET', KEYS[4], ARGV[8], now())
  redis.call('PEXPIRE', KEYS[4], window + fb)
  if unknown then
    redis.call('DEL', KEYS[3], KEYS[4])
    return reply(UNKNOWN)
  end
  return reply(BAD)
end

-- (the bit library is not in every Redis's Lua: plain arithmetic)
local function subset(a, b)
  for i = 0, 30 do
    local p = 2 ^ i
    if p > a then return true end
    if math.floor(a / p) % 2 == 1 and math.floor(b / p) % 2 == 0 then return false end
  end
  return true
end
local gen, held = tonumber(st[3]), scope_bits(st[4])
sid = tonumber(sid)
local want = tonumber(ARGV[4])
if want == -2 or (want >= 0 and not subset(want, held)) then return reply(BAD_SCOPE, gen, held, 0, 0, 0, 0, sid) end
if want == -1 then want = held end
if ARGV[3] ~= 'token' then
  -- A token to check (introspection): alive while the secret it came from
  -- is still held and it was not revoked (RFC 7009).
  local alive = 0
  local tsid = ARGV[14]
  if tsid ~= '' and (tsid == (st[8] or '1') or tsid == st[10]) then
    -- (revoked_until: as in admit.lua)
    local ru = tonumber(st[11])
    if not (ru and tonumber(ARGV[15]) <= ru and redis.call('EXISTS', KEYS[6]) == 1) then alive = 1 end
  end
  return reply(OK, gen, want, 0, 0, 0, 0, sid, alive)
end
-- The DPoP proof, once the client is authenticated (so a caller that is not
-- learns nothing of it) and before its token limit (a refused proof spends
-- none of it): refused by the caller, missing for a client registered with
-- dpop_bound_access_tokens (RFC 9449 section 5.2), or used before (its mark
-- lives as long as the proof is acceptable, section 11.1).
local proof = ARGV[16]
if proof == '0' then return reply(PROOF_INVALID, gen, want, 0, 0, 0, 0, sid) end
if proof == '' and st[12] == '1' then return reply(PROOF_REQUIRED, gen, want, 0, 0, 0, 0, sid) end
if proof == '1' and not redis.call('SET', KEYS[8], '1', 'NX', 'PX', ARGV[17]) then
  return reply(PROOF_REPLAYED, gen, want, 0, 0, 0, 0, sid)
end
local limit = tonumber(st[5]) or 30
local a, c, w = window_limit(KEYS[2], limit, window, now())
if a == 0 then return reply(TOKEN_LIMITED, gen, want, c, w, limit, 0, sid) end
return reply(OK, gen, want, c, w, limit, 0, sid)
