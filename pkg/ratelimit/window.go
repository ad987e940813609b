package ratelimit

// Buckets is the number of sub-windows a window is cut into: a bucket is
// ceil(window/Buckets) long (1 s for a minute), and the ring holds
// Buckets+1 of them, enough for every bucket a window-long interval touches.
const Buckets = 60

// WindowLua defines the Lua function
//
//	window_limit(key, limit, window_ms, now_ms) -> allowed, count, wait_ms
//
// It counts admitted requests in a ring of Buckets+1 per-bucket counters kept
// in one string at key (a header, then 4 bytes per bucket: 266 bytes whatever
// the limit or the traffic), with a running total, and admits the request
// when fewer than limit lie in the buckets that overlap the last window_ms
// milliseconds; the oldest, partial bucket counts in full, so the limiter may
// refuse up to one bucket early but never admits more than limit in any
// window-long interval (see the package documentation).
//
// allowed is 1 or 0; count is the number of admitted requests counted now,
// including this one when allowed; wait_ms is, when refused, the time until a
// request would be admitted (with nothing admitted in between), and when
// allowed, the time until the oldest counted request leaves the count (the
// window's reset). now_ms < 0 means "use the Redis server's clock" (TIME), one
// clock for every replica; a now_ms earlier than the latest admitted one
// counts as that one, so a key's time never runs backwards. The key's TTL is
// refreshed on every admission to when its newest bucket leaves the window,
// so idle keys vanish. The function touches only key. A change of window_ms
// for a key carries its whole count into the current bucket (never admitting
// too many). Limits up to 2^32-1 per bucket.
//
// The string is encoded by hand (big-endian, string.byte/string.char) because
// Redis's struct library is missing from miniredis, the in-process Redis.
const WindowLua = `
local WL_SLOTS, WL_HEAD = 61, 22
local WL_LEN = WL_HEAD + 4 * WL_SLOTS
local WL_ZERO = string.rep('\0', WL_LEN)

local function wl_now(now_ms)
  if now_ms >= 0 then return now_ms end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function wl_get(s, pos, n)
  local v = 0
  for i = pos, pos + n - 1 do v = v * 256 + string.byte(s, i) end
  return v
end

local function wl_put(v, n)
  local t = {}
  for i = n, 1, -1 do
    local d = v % 256
    t[i] = d
    v = (v - d) / 256
  end
  return string.char(unpack(t, 1, n))
end

local function wl_slot(s, j)
  return wl_get(s, WL_HEAD + 1 + 4 * (j % WL_SLOTS), 4)
end

local function wl_set(s, j, v)
  local p = WL_HEAD + 4 * (j % WL_SLOTS)
  return string.sub(s, 1, p) .. wl_put(v, 4) .. string.sub(s, p + 5)
end

local function window_limit(key, limit, window_ms, now_ms)
  now_ms = wl_now(now_ms)
  if window_ms < 1 then window_ms = 1 end
  local b = math.floor((window_ms + 59) / 60)
  local s = redis.call('GET', key)
  local last, tail, total = now_ms, 0, 0
  if s and #s == WL_LEN and wl_get(s, 19, 4) == b then
    last, tail, total = wl_get(s, 1, 6), wl_get(s, 7, 6), wl_get(s, 13, 6)
    if now_ms < last then now_ms = last end
  else
    if s and #s == WL_LEN then total = wl_get(s, 13, 6) end
    s = WL_ZERO
    if total > 0 then
      last, tail = now_ms, math.floor(now_ms / b)
      s = wl_set(s, tail, total)
    end
  end
  local k = math.floor(now_ms / b)
  local j0 = math.floor((now_ms - window_ms + 1) / b)
  if total > 0 and j0 > math.floor(last / b) then
    total, s = 0, WL_ZERO
  end
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
    s = wl_set(s, k, wl_slot(s, k) + 1)
    total = total + 1
    s = wl_put(now_ms, 6) .. wl_put(tail, 6) .. wl_put(total, 6) .. wl_put(b, 4) .. string.sub(s, WL_HEAD + 1)
    redis.call('SET', key, s, 'PX', (k + 1) * b + window_ms - now_ms)
    return 1, total, (tail + 1) * b + window_ms - 1 - now_ms
  end
  if limit <= 0 then return 0, total, window_ms end
  local rem, j = total, tail
  while rem >= limit and j <= k do
    rem = rem - wl_slot(s, j)
    j = j + 1
  end
  return 0, total, j * b + window_ms - 1 - now_ms
end
`
