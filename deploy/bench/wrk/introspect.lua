-- POST PATH (RFC 7662 introspection): /api/v1/oauth/introspect/, and Ory
-- Hydra's /admin/oauth2/introspect. Each data line is a client's
-- Authorization header value, a tab, and an access token of that client;
-- an empty Authorization value (the line starts with the tab) sends none,
-- as Hydra's admin introspection takes no client authentication.
function build(line, path)
  local auth, token = line:match("^([^\t]*)\t(.+)$")
  local headers = { ["Content-Type"] = "application/x-www-form-urlencoded" }
  if auth ~= "" then
    headers["Authorization"] = auth
  end
  return wrk.format("POST", path, headers, "token=" .. token .. "&token_type_hint=access_token")
end
