-- GET PATH with a DPoP-bound token and its proof (RFC 9449 section 7.1).
-- Proofs are single use, so the harness writes one file per thread,
-- DATAFILE.0, DATAFILE.1, ... (disjoint), each line "TOKEN<TAB>PROOF",
-- and each thread sends each of its lines once, in order. A thread that
-- ran out resends its last line: a replay, answered 401 and counted as an
-- error, and in exhausted, which done() reports so that the harness runs
-- again with more proofs (main.go, dpopRetries) rather than report it.
function build(line, path)
  local token, proof = line:match("^([^\t]+)\t([^\t]+)$")
  if not token then
    error("me-dpop: malformed data line")
  end
  return wrk.format("GET", path, {
    ["Authorization"] = "DPoP " .. token,
    ["DPoP"] = proof,
  })
end

function init(args)
  local datafile, path = args[1] .. "." .. (thread_index or 0), args[2]
  for line in io.lines(datafile) do
    if line ~= "" then
      reqs[#reqs + 1] = build(line, path)
    end
  end
  if #reqs == 0 then
    error("no requests in " .. datafile)
  end
  next_req = 1
end

function request()
  local r = reqs[next_req]
  if next_req < #reqs then
    next_req = next_req + 1
  elseif sent_last then
    exhausted = exhausted + 1
  else
    sent_last = true
  end
  return r
end
