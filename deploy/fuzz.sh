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
  "FuzzVerify ./pkg/dpop"
  "FuzzStrict ./pkg/jsonmembers"
)

# corpus lists the inputs go test has written for a target (seeds and
# findings alike), to see whether a failed run wrote a new one.
corpus() { ls "$1/testdata/fuzz/$2" 2>/dev/null || true; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for t in "${targets[@]}"; do
  read -r name pkg <<<"$t"
  echo "== fuzz $name ($pkg) for $duration"
  before=$(corpus "$pkg" "$name")
  if go test -run='^$' -fuzz="^${name}\$" -fuzztime="$duration" "$pkg" 2>&1 | tee "$out"; then
    continue
  fi
  # Go 1.26's fuzzing coordinator can report the end of a -fuzztime window
  # itself as a failure: a bare "context deadline exceeded", no input
  # written (go.dev/issue/75804, fixed in Go 1.27). A real finding always
  # writes its input, so only that counts.
  if [ "$(corpus "$pkg" "$name")" = "$before" ] && grep -qx '    context deadline exceeded' "$out"; then
    echo "fuzz: $name stopped with Go's fuzztime deadline race (go.dev/issue/75804) and wrote no input: not a finding"
    continue
  fi
  echo "fuzz: $name failed; the failing input is under $pkg/testdata/fuzz/$name/" >&2
  exit 1
done
echo "fuzz: all ${#targets[@]} targets ran $duration without a finding"
