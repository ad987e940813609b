# The module cache layer of the golang stand-in. deploy/Dockerfile runs
# `go mod download` in its build stage, and a container on this machine
# cannot reach the Go module proxy (no DNS nor route out of Docker's
# bridge). run.sh prepares a module cache on the host with the same
# `go mod download` (the host reaches the proxy) and it is copied here, the
# build context; GOPROXY=off then makes the build's `go mod download` and
# `go build` read that cache alone, and fail loudly rather than reach out if
# go.sum ever names a module the cache lacks. The modules are checked against
# go.sum as usual. (deploy/Dockerfile sets GOFLAGS itself, so it is not set
# here.)
ARG TOOLCHAIN
FROM ${TOOLCHAIN}
COPY . /go/pkg/mod
ENV GOPROXY=off
