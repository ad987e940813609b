-- Shared part of every scenario script. The harness writes this file
-- followed by the scenario's own (which defines build(line, path)) as one
-- wrk script, run as:
--
--   wrk -t T -c C -d D --latency -s SCRIPT URL -- DATAFILE PATH
--
-- Each non-empty line of DATAFILE is one request's variable part (a
-- credential, a token). The requests are built once per thread in init and
-- sent in rotation, each thread starting at a different place, so no
-- per-request work is left to wrk but a table lookup.

local thread_count = 0
local threads = {}

function setup(thread)
  thread:set("thread_index", thread_count)
  thread:set("exhausted", 0)
  thread_count = thread_count + 1
  threads[thread_count] = thread
end

local reqs = {}
local next_req = 1

function init(args)
  local datafile, path = args[1], args[2]
  for line in io.lines(datafile) do
    if line ~= "" then
      reqs[#reqs + 1] = build(line, path)
    end
  end
  if #reqs == 0 then
    error("no requests in " .. datafile)
  end
  next_req = ((thread_index or 0) * 7919) % #reqs + 1
end

function request()
  local r = reqs[next_req]
  next_req = next_req % #reqs + 1
  return r
end

-- done prints one machine-readable line. latency is in microseconds;
-- status counts answers of status 400 and above (wrk's own count);
-- exhausted sums the threads' sends past the end of their data (a script
-- whose lines are single use counts them; the others leave it 0).
function done(summary, latency, requests)
  local e = summary.errors
  local exhausted = 0
  for _, t in ipairs(threads) do
    exhausted = exhausted + (tonumber(t:get("exhausted")) or 0)
  end
  io.write(string.format(
    "BENCH_RESULT requests=%.0f duration_us=%.0f status=%.0f connect=%.0f read=%.0f write=%.0f timeout=%.0f p50_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f exhausted=%.0f\n",
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency:percentile(99.9), latency.max, exhausted))
end
