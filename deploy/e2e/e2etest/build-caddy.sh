#!/usr/bin/env bash
# Builds the Caddy the e2e suites run as the edge (e2etest.Caddy), at the
# version deploy/e2e/e2etest/caddytool/go.mod pins (the compose file's
# caddy image's), into the user's cache where the suites look for it:
# ${XDG_CACHE_HOME:-$HOME/.cache}/partnerapi/caddy-VERSION/caddy. Debian's
# caddy (2.6) lacks the tracing module (http.handlers.tracing) that
# deploy/Caddyfile's EDGE_TRACING=on needs, and neither retries a POST that
# found no upstream up nor sends a retried body (caddyserver/caddy#7546),
# which a rolling restart needs. A binary already there is kept. Prints its
# path.
set -euo pipefail
tool="$(cd "$(dirname "${BASH_SOURCE[0]}")/caddytool" && pwd)"
cd "$tool"
version="$(go list -m -f '{{.Version}}' github.com/caddyserver/caddy/v2)"
out="${XDG_CACHE_HOME:-$HOME/.cache}/partnerapi/caddy-$version/caddy"
if [ ! -x "$out" ]; then
	mkdir -p "$(dirname "$out")"
	CGO_ENABLED=0 go build -trimpath -o "$out.tmp" github.com/caddyserver/caddy/v2/cmd/caddy
	mv "$out.tmp" "$out"
fi
echo "$out"
