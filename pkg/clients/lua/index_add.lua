-- pkg/clients/lua/index_add.lua: add a member to an index set (the
-- organisations, an organisation's clients); a script, not a plain SADD,
-- so that Store.write can wait for the replicas to confirm it.
--
-- Its KEYS, ARGV and codes are its contract (the contract "index" in
-- pkg/clients/contracts.go): the section below is generated from it.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "index" in contracts.go; its Go side is in contracts_gen.go.)
local k_set = KEYS[1] -- the index set
local a_member = ARGV[1] -- the member
local PRESENT = 0 -- it was a member
local ADDED = 1 -- added
-- luacontract end

if redis.call('SADD', k_set, a_member) == 1 then return ADDED end
return PRESENT
