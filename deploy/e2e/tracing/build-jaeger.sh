#!/usr/bin/env bash
# Builds the Jaeger binary deploy/e2e/tracing's suite runs, at the version
# deploy/e2e/tracing/tool/go.mod pins, into the user's cache where the
# suite looks for it: ${XDG_CACHE_HOME:-$HOME/.cache}/partnerapi/jaeger-VERSION/jaeger
# (Go's os.UserCacheDir). A binary already there is kept. Prints its path.
# The first build takes about 15 minutes on two busy cores (Jaeger v2 is an
# OpenTelemetry Collector distribution); `go install` of it is refused, as
# its go.mod has replace directives, hence the tool module.
set -euo pipefail
tool="$(cd "$(dirname "${BASH_SOURCE[0]}")/tool" && pwd)"
cd "$tool"
version="$(go list -m -f '{{.Version}}' github.com/jaegertracing/jaeger)"
out="${XDG_CACHE_HOME:-$HOME/.cache}/partnerapi/jaeger-$version/jaeger"
if [ ! -x "$out" ]; then
	mkdir -p "$(dirname "$out")"
	CGO_ENABLED=0 go build -trimpath -o "$out.tmp" github.com/jaegertracing/jaeger/cmd/jaeger
	mv "$out.tmp" "$out"
fi
echo "$out"
