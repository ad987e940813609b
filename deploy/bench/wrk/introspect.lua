-- POST /api/v1/oauth/introspect/ (RFC 7662). Each data line is a client's
-- Authorization header value, a tab, and an access token of that client.
function build(line, path)
  local auth, token = line:match("^([^\t]+)\t(.+)$")
  return wrk.format("POST", path, {
    ["Authorization"] = auth,
    ["Content-Type"] = "application/x-www-form-urlencoded",
  }, "token=" .. token .. "&token_type_hint=access_token")
end
