-- POST /api/v1/oauth/token/ (client credentials grant). Each data line is
-- one client's Authorization header value: "Basic base64(id:secret)".
function build(line, path)
  return wrk.format("POST", path, {
    ["Authorization"] = line,
    ["Content-Type"] = "application/x-www-form-urlencoded",
  }, "grant_type=client_credentials")
end
