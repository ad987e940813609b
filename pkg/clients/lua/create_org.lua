-- pkg/clients/lua/create_org.lua: create an organisation's record and its
-- first audit entry in one step, or nothing if the slug is taken
-- (Store.CreateOrg).
--
-- KEYS (under the organisation's hash tag): 1 the record, 2 its audit
-- stream.
-- ARGV: 1 slug, 2 name, 3 environment, 4 created_at (RFC 3339), 5 the
-- audit stream's cap, 6 a nonce kept in the record, 7... the audit entry's
-- fields (audit.Record.Fields), field-value pairs.
--
-- Reply: 1 created (or the same creation run again, known by its nonce: a
-- retry after a broken connection writes nothing), 0 the slug is taken.
if redis.call('EXISTS', KEYS[1]) == 1 then
  if redis.call('HGET', KEYS[1], 'nonce') == ARGV[6] then return 1 end
  return 0
end
redis.call('HSET', KEYS[1], 'slug', ARGV[1], 'name', ARGV[2], 'environment', ARGV[3], 'created_at', ARGV[4], 'nonce', ARGV[6])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', unpack(ARGV, 7))
return 1
