-- GET PATH with a bearer token: /api/v1/me/, and the ceilings' /bare and
-- /redis, which get the very same requests. Each data line is one access
-- token.
function build(line, path)
  return wrk.format("GET", path, {
    ["Authorization"] = "Bearer " .. line,
  })
end
