-- pkg/clients/lua/revoke_token.lua: mark one access token revoked (RFC
-- 7009) and raise the client's revoked_until to the token's exp (admit.lua
-- reads the mark only for tokens expiring no later) (Store.RevokeToken).
--
-- KEYS (under the client's hash tag): 1 the token's mark, 2 the client
-- record.
-- ARGV: 1 the mark's lifetime (ms), 2 the token's exp (s).
-- Reply: 1.
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  local ru = tonumber(redis.call('HGET', KEYS[2], 'revoked_until')) or 0
  if tonumber(ARGV[2]) > ru then redis.call('HSET', KEYS[2], 'revoked_until', ARGV[2]) end
end
return 1
