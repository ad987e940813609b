-- pkg/clients/lua/unlock.lua: delete a lock only if it still holds this
-- holder's token (Store.lock, SeedSandbox).
--
-- Its KEYS, ARGV and codes are its contract (the contract "unlock" in
-- pkg/clients/contracts.go): the section below is generated from it.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "unlock" in contracts.go; its Go side is in contracts_gen.go.)
local k_lock = KEYS[1] -- the lock
local a_token = ARGV[1] -- the holder's token
local NOT_HELD = 0 -- not held by this holder
local DELETED = 1 -- deleted
-- luacontract end

if redis.call('GET', k_lock) ~= a_token then return NOT_HELD end
redis.call('DEL', k_lock)
return DELETED
