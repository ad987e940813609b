-- pkg/ratelimit/window.lua: a library, not a script of its own. It defines
-- the local functions wl_now(now_ms) and
-- window_limit(key, limit, window_ms, now_ms) -> allowed, count, wait_ms
-- (window.go, WindowLua, and the package documentation describe them) for
-- the scripts composed after it (package luascript: this file is their
-- first, at line 1; the script's own file follows at the offset of this
-- file's line count, and errors name both files' lines).
--
-- KEYS: none of its own (window_limit touches only the key it is given).
-- ARGV: none of its own. window_limit's allowed is WL_ALLOWED or
-- WL_REFUSED, codes of its contract (windowContract in
-- pkg/ratelimit/contracts.go; Go's side: windowCode): the section below
-- is generated from it.
--
-- It counts admitted requests in a ring of 61 buckets of
-- b = ceil(window_ms/60) ms kept in one string at key: a 22-byte header,
-- then per bucket its count (4 bytes) and the time of its newest admission
-- (3 bytes, ms since the bucket's start), all big-endian, bucket j at slot
-- j % 61:
--   last (6 bytes): the time of the latest admission, in ms;
--   tail (6): the oldest bucket with a non-zero count;
--   total (6): the sum of the counts, as of the latest admission;
--   b (4): the bucket length in ms the ring was written with.
-- A bucket is counted while its newest admission is less than window_ms
-- old, so a bucket, and every request in it, leaves the count exactly
-- window_ms after its newest request: a request refused at now is admitted
-- at now + window_ms at the latest (its limit-th newest counted request is
-- no newer than now). Every non-zero slot belongs to a bucket in [tail,
-- last's bucket]: slots of buckets that leave are zeroed, so a slot is zero
-- when its bucket comes round again. The string is encoded by hand
-- (string.byte/string.char) because Redis's struct library is missing from
-- miniredis, the in-process Redis.
-- luacontract begin: generated from the contract in Go; edit that, then go generate.
-- (The contract "window" in contracts.go; its Go side is in contracts_gen.go.)
local WL_REFUSED = 0 -- over the limit: not counted
local WL_ALLOWED = 1 -- under the limit: counted
-- luacontract end
local WL_SLOTS, WL_HEAD, WL_SLOT = 61, 22, 7
local WL_LEN = WL_HEAD + WL_SLOT * WL_SLOTS
-- The length of the previous layout (4-byte counts only): its total is read
-- and carried over, like a changed window's.
local WL_OLD_LEN = WL_HEAD + 4 * WL_SLOTS
-- The largest bucket whose offsets fit in 3 bytes.
local WL_MAX_B = 16777216

local function wl_now(now_ms)
  if now_ms >= 0 then return now_ms end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- wl_slot returns bucket j's count and the offset of its newest admission.
local function wl_slot(s, j)
  local p = WL_HEAD + 1 + WL_SLOT * (j % WL_SLOTS)
  local a, b, c, d, e, f, g = string.byte(s, p, p + 6)
  return ((a * 256 + b) * 256 + c) * 256 + d, (e * 256 + f) * 256 + g
end

-- wl_rec packs a bucket's count (4 bytes) and newest offset (3 bytes), and
-- wl_header last, tail, total (6 bytes each) and b (4 bytes), big-endian,
-- each in one string.char. The bytes are split inline: in Redis's Lua a
-- function call costs about as much as fifteen arithmetic operations and
-- every string made about as much as sixty, and helpers returning a
-- number's bytes made these two 23,000 of an admission's 158,000
-- instructions (15,000 now; callgrind's count of a redis-server running
-- the script; Redis's own time per call: BenchmarkAllow's redis-us/call).
local function wl_rec(n, off)
  local n4 = n % 256
  n = (n - n4) / 256
  local n3 = n % 256
  n = (n - n3) / 256
  local n2 = n % 256
  local o3 = off % 256
  off = (off - o3) / 256
  local o2 = off % 256
  return string.char((n - n2) / 256, n2, n3, n4, (off - o2) / 256, o2, o3)
end

local function wl_header(last, tail, total, b)
  local l6 = last % 256
  last = (last - l6) / 256
  local l5 = last % 256
  last = (last - l5) / 256
  local l4 = last % 256
  last = (last - l4) / 256
  local l3 = last % 256
  last = (last - l3) / 256
  local l2 = last % 256
  local t6 = tail % 256
  tail = (tail - t6) / 256
  local t5 = tail % 256
  tail = (tail - t5) / 256
  local t4 = tail % 256
  tail = (tail - t4) / 256
  local t3 = tail % 256
  tail = (tail - t3) / 256
  local t2 = tail % 256
  local n6 = total % 256
  total = (total - n6) / 256
  local n5 = total % 256
  total = (total - n5) / 256
  local n4 = total % 256
  total = (total - n4) / 256
  local n3 = total % 256
  total = (total - n3) / 256
  local n2 = total % 256
  local b4 = b % 256
  b = (b - b4) / 256
  local b3 = b % 256
  b = (b - b3) / 256
  local b2 = b % 256
  return string.char((last - l2) / 256, l2, l3, l4, l5, l6, (tail - t2) / 256, t2, t3, t4, t5, t6,
    (total - n2) / 256, n2, n3, n4, n5, n6, (b - b2) / 256, b2, b3, b4)
end

local function wl_set(s, j, n, off)
  local p = WL_HEAD + WL_SLOT * (j % WL_SLOTS)
  return string.sub(s, 1, p) .. wl_rec(n, off) .. string.sub(s, p + WL_SLOT + 1)
end

local function window_limit(key, limit, window_ms, now_ms)
  now_ms = wl_now(now_ms)
  if window_ms < 1 then window_ms = 1 end
  if window_ms > 60 * WL_MAX_B then window_ms = 60 * WL_MAX_B end
  if limit > 4294967295 then limit = 4294967295 end
  local b = math.floor((window_ms + 59) / 60)
  local s = redis.call('GET', key)
  local last, tail, total, fresh = now_ms, 0, 0, true
  if s and (#s == WL_LEN or #s == WL_OLD_LEN) then
    local l1, l2, l3, l4, l5, l6, t1, t2, t3, t4, t5, t6, n1, n2, n3, n4, n5, n6, b1, b2, b3, b4 = string.byte(s, 1, WL_HEAD)
    total = ((((n1 * 256 + n2) * 256 + n3) * 256 + n4) * 256 + n5) * 256 + n6
    if #s == WL_LEN and ((b1 * 256 + b2) * 256 + b3) * 256 + b4 == b then
      last = ((((l1 * 256 + l2) * 256 + l3) * 256 + l4) * 256 + l5) * 256 + l6
      tail = ((((t1 * 256 + t2) * 256 + t3) * 256 + t4) * 256 + t5) * 256 + t6
      fresh = false
      if now_ms < last then now_ms = last end
    end
  end
  local k = math.floor(now_ms / b)
  -- A bucket whose newest admission is at or before gone has left.
  local gone = now_ms - window_ms
  if fresh then
    -- A new key, a changed window or the previous layout: the old count,
    -- if any, goes into the current bucket, as if admitted now.
    s = string.rep('\0', WL_LEN)
    tail = k
    if total > 0 then s = wl_set(s, k, total, now_ms - k * b) end
  elseif total > 0 and last <= gone then
    -- Every bucket has left (the latest admission did).
    total, s = 0, string.rep('\0', WL_LEN)
  end
  -- Drop the buckets that left, oldest first, then move tail to the oldest
  -- non-zero one. Buckets are in time order, so the first one that has not
  -- left ends the loop.
  -- toff: the offset of tail's newest admission once the loop stops at it.
  local stop, toff = tail + WL_SLOTS, 0
  while total > 0 do
    if tail == stop then total = 0 break end -- (a damaged string)
    local n, off = wl_slot(s, tail)
    if n > 0 then
      toff = off
      if tail * b + off > gone then break end
      total = total - n
      s = wl_set(s, tail, 0, 0)
    end
    tail = tail + 1
  end
  if total == 0 then tail = k end
  if total < limit then
    total = total + 1
    local n = wl_slot(s, k)
    local p = WL_HEAD + WL_SLOT * (k % WL_SLOTS)
    s = wl_header(now_ms, tail, total, b) ..
      string.sub(s, WL_HEAD + 1, p) .. wl_rec(n + 1, now_ms - k * b) .. string.sub(s, p + WL_SLOT + 1)
    -- The key lives until its newest bucket, this request's, leaves.
    redis.call('SET', key, s, 'PX', window_ms)
    -- The window's reset: when the oldest counted bucket leaves (its
    -- newest admission is this request's when it is the current bucket).
    if tail == k then toff = now_ms - k * b end
    return WL_ALLOWED, total, tail * b + toff + window_ms - now_ms
  end
  if fresh and total > 0 then
    redis.call('SET', key, wl_header(now_ms, tail, total, b) .. string.sub(s, WL_HEAD + 1), 'PX', window_ms)
  end
  if limit <= 0 then return WL_REFUSED, total, window_ms end
  -- Admitted again once the bucket holding the limit-th newest counted
  -- request has left: window_ms after its newest admission.
  local rem, j = total, tail
  local n, off = wl_slot(s, j)
  while rem - n >= limit and j < k do
    rem = rem - n
    j = j + 1
    n, off = wl_slot(s, j)
  end
  return WL_REFUSED, total, j * b + off + window_ms - now_ms
end
