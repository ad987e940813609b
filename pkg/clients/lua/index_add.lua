-- pkg/clients/lua/index_add.lua: add a member to an index set (the
-- organisations, an organisation's clients); a script, not a plain SADD,
-- so that Store.write can wait for the replicas to confirm it.
--
-- KEYS: 1 the index set. ARGV: 1 the member.
-- Reply: 1 when added, 0 when it was there.
return redis.call('SADD', KEYS[1], ARGV[1])
