-- pkg/ratelimit/window.lua: a library, not a script of its own. It defines
-- the local functions wl_now(now_ms) and
-- window_limit(key, limit, window_ms, now_ms) -> allowed, count, wait_ms
-- (window.go, WindowLua, and the package documentation describe them) for
-- the scripts composed after it (package luascript: this file is their
-- first, at line 1; the script's own file follows at the offset of this
-- file's line count, and errors name both files' lines).
--
-- KEYS: none of its own (window_limit touches only the key it is given).
-- ARGV: none of its own.
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

-- wl_b32 and wl_b48 split v into 4 and 6 big-endian bytes; the strings
-- are made by one string.char each (smaller strings joined cost more).
local function wl_b32(v)
  local d = v % 256
  v = (v - d) / 256
  local c = v % 256
  v = (v - c) / 256
  local b = v % 256
  return (v - b) / 256, b, c, d
end

local function wl_b48(v)
  local lo = v % 4294967296
  local hi = (v - lo) / 4294967296
  local c, d, e, f = wl_b32(lo)
  return (hi - hi % 256) / 256, hi % 256, c, d, e, f
end

-- wl_rec packs a bucket's count and newest offset.
local function wl_rec(n, off)
  local a, b, c, d = wl_b32(n)
  local _, e, f, g = wl_b32(off)
  return string.char(a, b, c, d, e, f, g)
end

-- wl_header packs last, tail, total (6 bytes each) and b (4 bytes).
local function wl_header(last, tail, total, b)
  local l1, l2, l3, l4, l5, l6 = wl_b48(last)
  local t1, t2, t3, t4, t5, t6 = wl_b48(tail)
  local n1, n2, n3, n4, n5, n6 = wl_b48(total)
  local b1, b2, b3, b4 = wl_b32(b)
  return string.char(l1, l2, l3, l4, l5, l6, t1, t2, t3, t4, t5, t6, n1, n2, n3, n4, n5, n6, b1, b2, b3, b4)
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
  local stop = tail + WL_SLOTS
  while total > 0 do
    if tail == stop then total = 0 break end -- (a damaged string)
    local n, off = wl_slot(s, tail)
    if n > 0 then
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
    -- The window's reset: when the oldest counted bucket leaves.
    local _, off = wl_slot(s, tail)
    return 1, total, tail * b + off + window_ms - now_ms
  end
  if fresh and total > 0 then
    redis.call('SET', key, wl_header(now_ms, tail, total, b) .. string.sub(s, WL_HEAD + 1), 'PX', window_ms)
  end
  if limit <= 0 then return 0, total, window_ms end
  -- Admitted again once the bucket holding the limit-th newest counted
  -- request has left: window_ms after its newest admission.
  local rem, j = total, tail
  local n, off = wl_slot(s, j)
  while rem - n >= limit and j < k do
    rem = rem - n
    j = j + 1
    n, off = wl_slot(s, j)
  end
  return 0, total, j * b + off + window_ms - now_ms
end
