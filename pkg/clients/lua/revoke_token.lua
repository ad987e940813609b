-- pkg/clients/lua/revoke_token.lua: mark one access token revoked (RFC
-- 7009) and raise the client's revoked_until to the token's exp (admit.lua
-- reads the mark only for tokens expiring no later) (Store.RevokeToken).
--
-- Its KEYS, ARGV and codes are its contract (the contract "revokeToken" in
-- pkg/clients/contracts.go): the section below is generated from it. Both
-- keys are under the client's hash tag.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "revokeToken" in contracts.go; its Go side is in contracts_gen.go.)
local k_mark = KEYS[1] -- the token's revocation mark
local k_client = KEYS[2] -- the client record
local a_ttl_ms = ARGV[1] -- the mark's lifetime
local a_exp = ARGV[2] -- the token's exp (s)
local REVOKED = 1 -- marked
-- luacontract end

redis.call('SET', k_mark, '1', 'PX', a_ttl_ms)
if redis.call('EXISTS', k_client) == 1 then
  local ru = tonumber(redis.call('HGET', k_client, 'revoked_until')) or 0
  if tonumber(a_exp) > ru then redis.call('HSET', k_client, 'revoked_until', a_exp) end
end
return REVOKED
