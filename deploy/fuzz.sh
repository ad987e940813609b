#!/usr/bin/env bash
# Runs every fuzz target for a fixed time, one after the other, and fails on
# the first finding. CI (.ci/run) calls it with 10s.
#
#   bash deploy/fuzz.sh [DURATION]     # DURATION as for -fuzztime: 10s, 2m, 5000x
#
# A finding is written by `go test` to the package's testdata/fuzz/<Target>/
# directory: commit it, so the seed corpus replays it on every `go test`.
# The token request and bearer targets run against Redis (redistest: REDIS_URL
# or 127.0.0.1:6379; with CI=true a missing Redis fails).
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-10s}"

targets=(
  "FuzzTokenRequest ./authserver/tokenserver"
  "FuzzBasicCredentials ./authserver/tokenserver"
  "FuzzBearerHeader ./resourceserver/api"
  "FuzzVerify ./pkg/accesstoken"
  "FuzzVerifySigned ./pkg/accesstoken"
)

for t in "${targets[@]}"; do
  read -r name pkg <<<"$t"
  echo "== fuzz $name ($pkg) for $duration"
  if ! go test -run='^$' -fuzz="^${name}\$" -fuzztime="$duration" "$pkg"; then
    echo "fuzz: $name failed; the failing input is under $pkg/testdata/fuzz/$name/" >&2
    exit 1
  fi
done
echo "fuzz: all ${#targets[@]} targets ran $duration without a finding"
