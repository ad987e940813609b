#!/bin/sh
# Builds Ory Hydra for the load harness's side-by-side comparison
# (go run ./deploy/bench --hydra-bin DIR/hydra):
#
#   deploy/bench/hydra/build.sh DIR [VERSION]
#
# VERSION defaults to v2.3.0. Nothing of Hydra is in this repository: the
# module is downloaded from the Go module proxy (go mod download), copied
# to a scratch directory, its replace of github.com/ory/hydra-client-go/v2
# by ./internal/httpclient dropped (the module zip has no internal/httpclient,
# so the published client is used), and built with SQLite (cgo: a C
# compiler is needed) for DSN=memory, as Hydra's own release builds are
# (tags sqlite,sqlite_omit_load_extension). The binary is DIR/hydra.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 DIR [VERSION]" >&2
	exit 2
fi
dir=$1
version=${2:-v2.3.0}
module=github.com/ory/hydra/v2

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# Outside any module, so that go mod download fetches just this one.
src=$(cd "$work" && GOFLAGS= go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
	echo "go mod download $module@$version: no module directory" >&2
	exit 1
fi
cp -R "$src" "$work/hydra"
chmod -R u+w "$work/hydra"
cd "$work/hydra"
# The replace points into the repository, not the module zip.
sed -i.orig '/^replace github.com\/ory\/hydra-client-go\/v2 => .\/internal\/httpclient/d' go.mod
rm -f go.mod.orig

pkg=$module/driver/config
GOFLAGS=-mod=mod CGO_ENABLED=1 go build \
	-tags sqlite,sqlite_omit_load_extension \
	-ldflags "-X $pkg.Version=$version -X $pkg.Date=$(date -u +%Y-%m-%dT%H:%M:%SZ) -X $pkg.Commit=module-proxy" \
	-o "$dir/hydra" .
"$dir/hydra" version
