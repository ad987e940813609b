-- pkg/clients/lua/unlock.lua: delete a lock only if it still holds this
-- holder's token (Store.lock, SeedSandbox).
--
-- KEYS: 1 the lock. ARGV: 1 the holder's token.
-- Reply: 1 deleted, 0 not held by this holder.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
