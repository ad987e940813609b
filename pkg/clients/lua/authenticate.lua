-- pkg/clients/lua/authenticate.lua: one client authentication on the token endpoint, on
-- introspection and on revocation, in one round trip (authenticate.go,
-- Store.Authenticate, documents the limits it keeps). Composed after
-- pkg/ratelimit/window.lua (wl_now, window_limit; scripts.go).
--
-- Its KEYS, ARGV, reply and codes are its contract (the contract "auth" in
-- pkg/clients/contracts.go; Go's side: authKeys, authArgs, authReply,
-- authCode): the section below is generated from it. Every key is under
-- the client's hash tag, so it runs on Cluster.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "auth" in contracts.go; its Go side is in contracts_gen.go.)
local k_client = KEYS[1] -- the client record
local k_token_log = KEYS[2] -- its token requests' window
local k_failure_log = KEYS[3] -- the presenting address's failures for this client (a window)
local k_failure_tags = KEYS[4] -- the tags of the wrong credentials that address presented
local k_repeat_log = KEYS[5] -- the window of their repeats
local k_revoked_mark = KEYS[6] -- the revocation mark of a token to check (introspection), else unused
local k_jti_mark = KEYS[7] -- the single-use mark of an assertion's jti (private_key_jwt), else unused
local k_proof_mark = KEYS[8] -- the single-use mark of a DPoP proof (RFC 9449 section 11.1), else unused
local a_digest = ARGV[1] -- the secret's digest, raw ('' for an assertion or a certificate)
local a_digest_hex = ARGV[2] -- the same, hex (records written before digests were stored raw)
local a_mode = ARGV[3] -- 'token' or 'caller'
local a_want_scopes = ARGV[4] -- requested scope bits; -1 every scope held, -2 a scope that cannot be granted
local a_now_ms = ARGV[5] -- the limits' clock; -1 the Redis clock
local a_window_ms = ARGV[6] -- the limits' window
local a_failure_limit = ARGV[7] -- distinct wrong credentials per window
local a_tag = ARGV[8] -- the credential's failure tag
local a_repeat_limit = ARGV[9] -- repeats of refused credentials per window
local a_method = ARGV[10] -- 'secret', 'assertion' or 'certificate' (mutual TLS, RFC 8705 section 2)
local a_verified = ARGV[11] -- the assertion's signature and claims (or the certificate) verified against the keys (or subject) of keys_version
local a_keys_version = ARGV[12] -- the version of the keys the assertion or certificate was verified against
local a_jti_ttl_ms = ARGV[13] -- the jti mark's lifetime (not positive: refused)
local a_check_secret_id = ARGV[14] -- the secret id of a token to check ('': none)
local a_check_exp = ARGV[15] -- its exp (s)
local a_proof = ARGV[16] -- the DPoP proof (RFC 9449 section 5): '' none, '0' refused by the caller, '1' verified
local a_proof_ttl_ms = ARGV[17] -- the proof's mark's lifetime (dpop.ReplayTTL)
local UNKNOWN = 0 -- no such client (failure accounted, then deleted)
local BAD = 1 -- a wrong credential, or a revoked client
local TOO_MANY = 2 -- a failure budget spent: not checked
local BAD_SCOPE = 3 -- authenticated; the scope is not held
local TOKEN_LIMITED = 4 -- authenticated; over the token limit
local OK = 5 -- authenticated (and counted)
local STALE_KEYS = 6 -- the assertion was verified against older keys: nothing done
local PROOF_REQUIRED = 7 -- no DPoP proof from a dpop_bound client
local PROOF_INVALID = 8 -- a DPoP proof the caller refused
local PROOF_REPLAYED = 9 -- a DPoP proof used before
-- The reply, always 9 values, is built by reply, whose calls package
-- luascript inlines (a field not given, or nil, is 0 or ''):
--   {code, generation, granted, count, wait_ms, limit, repeated, secret_id, token_alive}
local function reply(code, generation, granted, count, wait_ms, limit, repeated, secret_id, token_alive) return {code, generation or 0, granted or 0, count or 0, wait_ms or 0, limit or 0, repeated or 0, secret_id or 0, token_alive or 0} end -- luacontract:inline
-- luacontract end

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

local st = redis.call('HMGET', k_client, 'status', 'secret_digest', 'generation', 'scopes', 'token_rate_limit',
  'auth_method', 'keys_version', 'secret_id', 'secret2_digest', 'secret2_id', 'revoked_until', 'dpop_bound')
-- An unknown id takes the path of a wrong secret, failure accounting
-- included, so that the time of the answer does not tell which ids exist;
-- the keys it wrote are deleted before it returns (made-up ids leave
-- nothing behind).
local unknown = not st[3]
local keyed = st[6] == 'private_key_jwt'
local assertion = a_method == 'assertion'
-- A mutual-TLS client (RFC 8705 section 2) authenticates by the
-- certificate of its connection, which the caller checked against its
-- registration (subject or keys) of keys_version.
local tls = st[6] == 'tls_client_auth' or st[6] == 'self_signed_tls_client_auth'
local certificate = a_method == 'certificate'
-- The assertion (or certificate) was checked against keys older than the
-- client's: the caller reloads them and tries again (nothing was counted
-- or written).
if ((assertion and keyed) or (certificate and tls)) and st[7] ~= a_keys_version then return reply(STALE_KEYS) end

-- One clock reading for the whole script, taken when first needed: the
-- failure accounting and the token limit need it, a caller that
-- authenticates for introspection or revocation does not, and its script
-- skips Redis's TIME (with the conversion of its reply, a ninth of that
-- script's instructions, by callgrind's count of a redis-server running
-- it; end to end: BenchmarkIntrospect in authserver/tokenserver).
local now_ms
local function now()
  if not now_ms then now_ms = wl_now(tonumber(a_now_ms)) end
  return now_ms
end
local window, flimit = tonumber(a_window_ms), tonumber(a_failure_limit)
-- The failure budget is looked at before the credential, so a spent budget
-- checks nothing; a failure is counted in the same script, so no burst gets
-- more than the budget checked. Without a failure log there is no tag.
local failures = 0
-- A tag counts while its own failure is less than a window old (that
-- failure's bucket then counts in the failure log too: package ratelimit's
-- window drops a bucket a window after its newest request).
local fb = math.floor((window + 59) / 60)
if redis.call('EXISTS', k_failure_log) == 1 then
  local seen = tonumber(redis.call('HGET', k_failure_tags, a_tag))
  if seen and seen > now() - window then
    -- A credential whose failure still counts: not checked again, not a
    -- new guess; limited apart.
    local ok, _, rwait = window_limit(k_repeat_log, tonumber(a_repeat_limit), window, now())
    if ok == WL_REFUSED then return reply(TOO_MANY, 0, 0, 0, rwait, 0, 1) end
    return reply(BAD, 0, 0, 0, 0, 0, 1)
  end
  local _, n = window_limit(k_failure_log, 0, window, now())
  failures = n
end
-- An assertion whose signature and claims verified is not a guess: the
-- budget does not refuse it (a neighbour's made-up kids must not lock the
-- client out), and its jti decides below. Nor is a certificate that
-- matched: the TLS handshake proved its key.
if failures >= flimit and not ((assertion or certificate) and a_verified == '1') then
  local _, _, fwait = window_limit(k_failure_log, flimit, window, now())
  return reply(TOO_MANY, 0, 0, 0, fwait)
end

-- The credential. A secret matches either of the client's secrets (each
-- with its id, which the token records); an assertion counts once its
-- signature and claims verified (the caller did that) and its jti was not
-- used before (the mark lives until the assertion expires).
local sid = nil
if st[1] == 'active' then
  if assertion then
    if keyed and a_verified == '1' and tonumber(a_jti_ttl_ms) > 0 and redis.call('SET', k_jti_mark, '1', 'NX', 'PX', a_jti_ttl_ms) then
      sid = st[8] or '1'
    end
  elseif certificate then
    if tls and a_verified == '1' then sid = st[8] or '1' end
  elseif not keyed and not tls then
    if st[2] == a_digest or st[2] == a_digest_hex then
      sid = st[8] or '1'
    elseif st[9] and st[9] == a_digest then
      sid = st[10]
    end
  end
end
if not sid then
  window_limit(k_failure_log, flimit, window, now())
  if redis.call('HLEN', k_failure_tags) >= flimit then
    local tags = redis.call('HGETALL', k_failure_tags)
    local old = now() - window
    for i = 1, #tags, 2 do
      if tonumber(tags[i + 1]) <= old then redis.call('HDEL', k_failure_tags, tags[i]) end
    end
  end
  redis.call('HSET', k_failure_tags, a_tag, now())
  redis.call('PEXPIRE', k_failure_tags, window + fb)
  if unknown then
    redis.call('DEL', k_failure_log, k_failure_tags)
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
local want = tonumber(a_want_scopes)
if want == -2 or (want >= 0 and not subset(want, held)) then return reply(BAD_SCOPE, gen, held, 0, 0, 0, 0, sid) end
if want == -1 then want = held end
if a_mode ~= 'token' then
  -- A token to check (introspection): alive while the secret it came from
  -- is still held and it was not revoked (RFC 7009).
  local alive = 0
  local tsid = a_check_secret_id
  if tsid ~= '' and (tsid == (st[8] or '1') or tsid == st[10]) then
    -- (revoked_until: as in admit.lua)
    local ru = tonumber(st[11])
    if not (ru and tonumber(a_check_exp) <= ru and redis.call('EXISTS', k_revoked_mark) == 1) then alive = 1 end
  end
  return reply(OK, gen, want, 0, 0, 0, 0, sid, alive)
end
-- The DPoP proof, once the client is authenticated (so a caller that is not
-- learns nothing of it) and before its token limit (a refused proof spends
-- none of it): refused by the caller, missing for a client registered with
-- dpop_bound_access_tokens (RFC 9449 section 5.2), or used before (its mark
-- lives as long as the proof is acceptable, section 11.1).
local proof = a_proof
if proof == '0' then return reply(PROOF_INVALID, gen, want, 0, 0, 0, 0, sid) end
if proof == '' and st[12] == '1' then return reply(PROOF_REQUIRED, gen, want, 0, 0, 0, 0, sid) end
if proof == '1' and not redis.call('SET', k_proof_mark, '1', 'NX', 'PX', a_proof_ttl_ms) then
  return reply(PROOF_REPLAYED, gen, want, 0, 0, 0, 0, sid)
end
local limit = tonumber(st[5]) or 30
local a, c, w = window_limit(k_token_log, limit, window, now())
if a == WL_REFUSED then return reply(TOKEN_LIMITED, gen, want, c, w, limit, 0, sid) end
return reply(OK, gen, want, c, w, limit, 0, sid)
