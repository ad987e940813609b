-- pkg/ratelimit/window.lua: a library, not a script of its own. It defines
-- the local functions wl_now(now_ms) and
-- window_limit(key, limit, window_ms, now_ms) -> allowed, count, wait_ms
-- (window.go, WindowLua, documents them) for the scripts composed after it
-- (package luascript: this file is their first, at line 1; the script's
-- own file follows at the offset of this file's line count, and errors
-- name both files' lines).
--
-- KEYS: none of its own (window_limit touches only the key it is given).
-- ARGV: none of its own.
--
-- The string at key: a 22-byte header, then 61 4-byte counters (bucket j at
-- slot j % 61), all big-endian:
--   last (6 bytes): the time of the latest admission, in ms;
--   tail (6): the oldest bucket with a non-zero count;
--   total (6): the sum of the counters, as of the latest admission;
--   b (4): the bucket length in ms the ring was written with.
-- Every non-zero counter belongs to a bucket in [tail, last's bucket]:
-- counters of buckets that leave are zeroed, so a slot is zero when its
-- bucket comes round again.
local WL_SLOTS, WL_HEAD = 61, 22
local WL_LEN = WL_HEAD + 4 * WL_SLOTS

local function wl_now(now_ms)
  if now_ms >= 0 then return now_ms end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function wl_slot(s, j)
  local p = WL_HEAD + 1 + 4 * (j % WL_SLOTS)
  local a, b, c, d = string.byte(s, p, p + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
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

local function wl_u32(v)
  return string.char(wl_b32(v))
end

-- wl_header packs last, tail, total (6 bytes each) and b (4 bytes).
local function wl_header(last, tail, total, b)
  local l1, l2, l3, l4, l5, l6 = wl_b48(last)
  local t1, t2, t3, t4, t5, t6 = wl_b48(tail)
  local n1, n2, n3, n4, n5, n6 = wl_b48(total)
  local b1, b2, b3, b4 = wl_b32(b)
  return string.char(l1, l2, l3, l4, l5, l6, t1, t2, t3, t4, t5, t6, n1, n2, n3, n4, n5, n6, b1, b2, b3, b4)
end

local function wl_set(s, j, v)
  local p = WL_HEAD + 4 * (j % WL_SLOTS)
  return string.sub(s, 1, p) .. wl_u32(v) .. string.sub(s, p + 5)
end

local function window_limit(key, limit, window_ms, now_ms)
  now_ms = wl_now(now_ms)
  if window_ms < 1 then window_ms = 1 end
  if limit > 4294967295 then limit = 4294967295 end
  local b = math.floor((window_ms + 59) / 60)
  local s = redis.call('GET', key)
  local last, tail, total, fresh = now_ms, 0, 0, true
  if s and #s == WL_LEN then
    local l1, l2, l3, l4, l5, l6, t1, t2, t3, t4, t5, t6, n1, n2, n3, n4, n5, n6, b1, b2, b3, b4 = string.byte(s, 1, WL_HEAD)
    total = ((((n1 * 256 + n2) * 256 + n3) * 256 + n4) * 256 + n5) * 256 + n6
    if ((b1 * 256 + b2) * 256 + b3) * 256 + b4 == b then
      last = ((((l1 * 256 + l2) * 256 + l3) * 256 + l4) * 256 + l5) * 256 + l6
      tail = ((((t1 * 256 + t2) * 256 + t3) * 256 + t4) * 256 + t5) * 256 + t6
      fresh = false
      if now_ms < last then now_ms = last end
    end
  end
  local k = math.floor(now_ms / b)
  if fresh then
    -- A new key, or a changed window: the old count, if any, goes into
    -- the current bucket.
    s = string.rep('\0', WL_LEN)
    tail = k
    if total > 0 then s = wl_set(s, k, total) end
  end
  -- j0: the oldest bucket overlapping (now - window, now], counted whole.
  local j0 = math.floor((now_ms - window_ms + 1) / b)
  if total > 0 and j0 > math.floor(last / b) then
    total, s = 0, string.rep('\0', WL_LEN)
  end
  -- Drop the buckets that left, then move tail to the oldest non-zero one.
  while total > 0 and (tail < j0 or wl_slot(s, tail) == 0) do
    local v = wl_slot(s, tail)
    if v > 0 then
      total = total - v
      s = wl_set(s, tail, 0)
    end
    tail = tail + 1
  end
  if total == 0 then tail = k end
  if total < limit then
    total = total + 1
    local p = WL_HEAD + 4 * (k % WL_SLOTS)
    s = wl_header(now_ms, tail, total, b) ..
      string.sub(s, WL_HEAD + 1, p) .. wl_u32(wl_slot(s, k) + 1) .. string.sub(s, p + 5)
    -- The key lives until its newest bucket leaves the window.
    if fresh or k ~= math.floor(last / b) then
      redis.call('SET', key, s, 'PX', (k + 1) * b + window_ms - now_ms)
    else
      redis.call('SET', key, s, 'KEEPTTL')
    end
    return 1, total, (tail + 1) * b + window_ms - 1 - now_ms
  end
  if fresh and total > 0 then
    redis.call('SET', key, wl_header(now_ms, tail, total, b) .. string.sub(s, WL_HEAD + 1),
      'PX', (k + 1) * b + window_ms - now_ms)
  end
  if limit <= 0 then return 0, total, window_ms end
  -- Admitted again once the buckets up to the one holding the limit-th
  -- newest counted request have left.
  local rem, j = total, tail
  while rem >= limit and j <= k do
    rem = rem - wl_slot(s, j)
    j = j + 1
  end
  return 0, total, j * b + window_ms - 1 - now_ms
end
