#!/usr/bin/env bash
# Checks the Docker deployment as far as a machine without a Docker engine
# can (CI's): the compose file, the edge's Caddyfile in both of its modes, and
# the binaries that deploy/Dockerfile builds, built the same way.
# .ci/run calls it; it installs docker-compose and caddy from Debian packages
# if they are missing, and exits non-zero on the first failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

step() { printf '== %s\n' "$*"; }
fail() {
	printf 'validate-compose: %s\n' "$*" >&2
	exit 1
}

# need COMMAND PACKAGE: installs the Debian package when the command is missing.
apt_updated=""
need() {
	command -v "$1" >/dev/null 2>&1 && return
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	if [ -z "$apt_updated" ]; then
		$sudo apt-get update -q >/dev/null
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$2" >/dev/null
	command -v "$1" >/dev/null 2>&1 || fail "$1 is missing and installing $2 did not provide it"
}
need docker-compose docker-compose
need caddy caddy
need python3 python3

step "docker-compose config ($(docker-compose version --short 2>/dev/null || echo '?'))"
docker-compose -f docker-compose.yml config -q
docker-compose -f docker-compose.yml config >"$tmp/compose.yml"

step "compose rules: scalable servers, one published port, durable Redis"
python3 - "$tmp/compose.yml" <<'PY'
import sys
import yaml

cfg = yaml.safe_load(open(sys.argv[1]))
services = cfg.get("services", {})
problems = []


def need(cond, msg):
    if not cond:
        problems.append(msg)


for name in ("redis", "init", "authserver", "resourceserver", "edge"):
    need(name in services, f"service {name} is missing")
for name, svc in services.items():
    need("container_name" not in svc, f"{name}: container_name prevents --scale")
    if {"monitoring", "tracing"} & set(svc.get("profiles", [])):
        # Monitoring and tracing may publish on loopback only.
        for p in svc.get("ports", []):
            host_ip = p.get("host_ip") if isinstance(p, dict) else str(p).split(":")[0]
            need(host_ip == "127.0.0.1", f"{name}: a monitoring port must bind 127.0.0.1, not {p!r}")
    elif name != "edge":
        need(not svc.get("ports"), f"{name}: only the edge publishes a port")

# Metrics: every server pool serves /metrics on a port Prometheus scrapes,
# never published, and the monitoring profile mounts the shipped files.
import json, os
for name, port in (("authserver", "9080"), ("resourceserver", "9081")):
    addr = services.get(name, {}).get("environment", {}).get("METRICS_ADDR")
    need(addr == f":{port}", f"{name}: METRICS_ADDR {addr!r}, want ':{port}' (deploy/prometheus/prometheus.yml)")
for name in ("prometheus", "grafana"):
    need(name in services and "monitoring" in services[name].get("profiles", []), f"{name}: missing from the monitoring profile")
for name, files in (("prometheus", ["deploy/prometheus/prometheus.yml", "deploy/prometheus/alerts.yml"]),
                    ("grafana", ["deploy/grafana/provisioning", "deploy/grafana/dashboards"])):
    mounts = " ".join(str(v) for v in services.get(name, {}).get("volumes", []))
    for f in files:
        need(f in mounts and os.path.exists(f), f"{name}: must mount {f}")
for f in os.listdir("deploy/grafana/dashboards"):
    try:
        json.load(open(os.path.join("deploy/grafana/dashboards", f)))
    except ValueError as e:
        problems.append(f"deploy/grafana/dashboards/{f}: {e}")

for name in ("authserver", "resourceserver"):
    svc = services.get(name, {})
    build = svc.get("build", {})
    need(build.get("target") == name and build.get("dockerfile") == "deploy/Dockerfile",
         f"{name}: must build deploy/Dockerfile, target {name}")
    need(svc.get("healthcheck", {}).get("test") == ["CMD", f"/{name}", "healthcheck"],
         f"{name}: healthcheck must be the binary's own healthcheck subcommand")

redis = services.get("redis", {})
cmd = redis.get("command") or []
cmd = cmd.split() if isinstance(cmd, str) else cmd
flags = {cmd[i]: cmd[i + 1] for i in range(len(cmd) - 1) if cmd[i].startswith("--")}
need(flags.get("--appendonly") == "yes" and flags.get("--appendfsync") == "always",
     "redis: AOF with appendfsync always is the documented durability")
need(any(":/data" in str(v) or (isinstance(v, dict) and v.get("target") == "/data")
         for v in redis.get("volumes", [])), "redis: /data must be a volume")
need("healthcheck" in redis, "redis: healthcheck missing")

auth = services.get("authserver", {})
need(auth.get("depends_on", {}).get("init", {}).get("condition") == "service_completed_successfully",
     "authserver: must wait for the init job")
need(any(str(v).endswith(":/keys:ro") or (isinstance(v, dict) and v.get("target") == "/keys" and v.get("read_only"))
         for v in auth.get("volumes", [])), "authserver: the keys volume must be read-only")

# Pinned images: a full version (redis:7.4.6-alpine), never a bare major
# (redis:7) or latest; distroless publishes per-Debian-release tags only.
import re
for name, svc in services.items():
    image = svc.get("image", "")
    if not image or image.startswith("authplatform/"):
        continue
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
    need(re.match(r"v?\d+\.\d+\.\d+", tag), f"{name}: image {image!r} must be pinned to a full version")

rs_env = services.get("resourceserver", {}).get("environment", {})
need(rs_env.get("BASE_URL") and rs_env.get("BASE_URL") == rs_env.get("ISSUER"),
     "resourceserver: BASE_URL must be the public base URL (PUBLIC_BASE_URL), like ISSUER")
as_env = services.get("authserver", {}).get("environment", {})
need(as_env.get("ADMIN_BASE_URL"),
     "authserver: ADMIN_BASE_URL must name the admin API's URL (DPoP proofs' htu), never left to a request's Host")

edge_ip = services.get("edge", {}).get("networks", {}).get("backend", {}) or {}
edge_ip = edge_ip.get("ipv4_address")
need(edge_ip, "edge: needs a fixed address on the backend network")
for name in ("authserver", "resourceserver"):
    trusted = services.get(name, {}).get("environment", {}).get("TRUSTED_PROXIES")
    need(trusted == f"{edge_ip}/32", f"{name}: TRUSTED_PROXIES {trusted!r} must be the edge's {edge_ip}/32")

if problems:
    print("\n".join("docker-compose.yml: " + p for p in problems), file=sys.stderr)
    sys.exit(1)
PY

step "compose sentinel profile (--env-file deploy/sentinel.env --profile sentinel)"
docker-compose -f docker-compose.yml --env-file deploy/sentinel.env --profile sentinel config >"$tmp/sentinel.yml"
python3 - "$tmp/sentinel.yml" <<'PY'
import sys
from urllib.parse import urlsplit, parse_qs

import yaml

services = yaml.safe_load(open(sys.argv[1])).get("services", {})
problems = []


def need(cond, msg):
    if not cond:
        problems.append(msg)


for name in ("redis", "redis-replica", "sentinel-1", "sentinel-2", "sentinel-3"):
    need(name in services, f"service {name} is missing")
replica = services.get("redis-replica", {})
cmd = replica.get("command") or []
need("--replicaof" in cmd and cmd[cmd.index("--replicaof") + 1:cmd.index("--replicaof") + 3] == ["redis", "6379"],
     "redis-replica: must replicate redis:6379")
need("--appendonly" in cmd and "--appendfsync" in cmd, "redis-replica: AOF like the primary")
need(not any("min-replicas-to-write" in str(c) for c in cmd + (services.get("redis", {}).get("command") or [])),
     "min-replicas-to-write would fail every rate-limit write when a replica is down (deploy/docs/scaling.md)")
for i in (1, 2, 3):
    text = " ".join(services.get(f"sentinel-{i}", {}).get("command") or [])
    need("sentinel monitor partnerapi redis 6379 2" in text, f"sentinel-{i}: must monitor redis as partnerapi, quorum 2")
for name in ("init", "authserver", "resourceserver"):
    url = services.get(name, {}).get("environment", {}).get("REDIS_URL", "")
    u = urlsplit(url)
    q = parse_qs(u.query)
    need(u.hostname == "sentinel-1" and q.get("master_name") == ["partnerapi"] and sorted(q.get("addr", [])) == ["sentinel-2:26379", "sentinel-3:26379"],
         f"{name}: REDIS_URL {url!r} must name the three sentinels and master partnerapi")
if problems:
    print("\n".join("docker-compose.yml (sentinel profile): " + p for p in problems), file=sys.stderr)
    sys.exit(1)
PY

step "compose tracing profile (--env-file deploy/tracing.env --profile tracing)"
docker-compose -f docker-compose.yml --env-file deploy/tracing.env --profile tracing config >"$tmp/tracing.yml"
python3 - "$tmp/tracing.yml" <<'PY'
import sys

import yaml

services = yaml.safe_load(open(sys.argv[1])).get("services", {})
problems = []


def need(cond, msg):
    if not cond:
        problems.append(msg)


need("tracing" in services.get("jaeger", {}).get("profiles", []), "jaeger: missing from the tracing profile")
edge = services.get("edge", {}).get("environment", {})
need(edge.get("EDGE_TRACING") == "on", f"edge: EDGE_TRACING {edge.get('EDGE_TRACING')!r}, want on with deploy/tracing.env")
need(edge.get("OTEL_EXPORTER_OTLP_ENDPOINT") == "http://jaeger:4317", "edge: must export OTLP/gRPC to jaeger:4317")
for name in ("authserver", "resourceserver"):
    url = services.get(name, {}).get("environment", {}).get("OTEL_EXPORTER_OTLP_ENDPOINT")
    need(url == "http://jaeger:4318", f"{name}: OTEL_EXPORTER_OTLP_ENDPOINT {url!r}, want http://jaeger:4318")
if problems:
    print("\n".join("docker-compose.yml (tracing profile): " + p for p in problems), file=sys.stderr)
    sys.exit(1)
PY

# Debian bookworm's caddy is 2.6, whose reverse_proxy names request body
# buffering differently (deploy/Caddyfile, CADDY_COMPAT).
compat=current
case "$(caddy version)" in v2.6.* | 2.6.*) compat=2.6 ;; esac

caddy_validate() {
	if ! env "$@" CADDY_COMPAT="$compat" caddy validate --config deploy/Caddyfile --adapter caddyfile >"$tmp/caddy.log" 2>&1; then
		cat "$tmp/caddy.log" >&2
		fail "caddy validate failed"
	fi
}
step "caddy validate deploy/Caddyfile: compose (DNS upstreams), caddy $(caddy version | cut -d' ' -f1), CADDY_COMPAT=$compat"
caddy_validate
# Tracing on needs Caddy's tracing module, which Debian's caddy is built
# without; deploy/e2e/tracing runs the file with a Caddy built with it.
if caddy list-modules 2>/dev/null | grep -qx http.handlers.tracing; then
	step "caddy validate deploy/Caddyfile: tracing on (EDGE_TRACING=on, deploy/docs/tracing.md)"
	caddy_validate EDGE_TRACING=on
else
	step "caddy validate deploy/Caddyfile with EDGE_TRACING=on: skipped, this caddy has no tracing module (deploy/e2e/tracing runs it)"
fi
step "caddy validate deploy/Caddyfile: mutual TLS (EDGE_MTLS=on, deploy/docs/mtls.md)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
	-keyout "$tmp/server-key.pem" -out "$tmp/server.pem" >/dev/null 2>&1 || fail "openssl could not make a test certificate"
caddy_validate EDGE_MTLS=on EDGE_TLS_CERT="$tmp/server.pem" EDGE_TLS_KEY="$tmp/server-key.pem"
step "caddy validate deploy/Caddyfile: topology test (static upstreams)"
caddy_validate UPSTREAMS=static CADDY_ADMIN=off EDGE_BIND=127.0.0.1 EDGE_PORT=18080 \
	AUTH_UPSTREAMS="127.0.0.1:18081 127.0.0.1:18082" RESOURCE_UPSTREAMS="127.0.0.1:18083 127.0.0.1:18084"

step "deploy/Dockerfile: Go version, build command, non-root distroless stages"
build="CGO_ENABLED=0 go build -tags grpcnotrace -trimpath -ldflags='-s -w' -pgo=\$s/release.pgo -o /out/ ./\$s"
grep -qF "$build" deploy/Dockerfile || fail "deploy/Dockerfile no longer builds with: $build"
grep -qF "for s in authserver resourceserver; do" deploy/Dockerfile || fail "deploy/Dockerfile no longer builds both servers"
gomod_version="$(awk '$1 == "go" { print $2 }' go.mod)"
grep -qx "ARG GO_VERSION=$gomod_version" deploy/Dockerfile || fail "deploy/Dockerfile's GO_VERSION is not go.mod's $gomod_version"
stages="$(grep -c '^FROM gcr.io/distroless/static-debian12:' deploy/Dockerfile)"
users="$(grep -c '^USER 65532:65532$' deploy/Dockerfile)"
! grep -qi '^# *syntax=' deploy/Dockerfile || fail "deploy/Dockerfile: no '# syntax=' line (BuildKit would fetch a frontend from Docker Hub; deploy/compose-ci builds offline)"
[ "$stages" -eq 3 ] && [ "$users" -eq 3 ] || fail "deploy/Dockerfile: want 3 distroless stages, each USER 65532:65532 (got $stages, $users)"

step "go build, as deploy/Dockerfile does"
for bin in authserver resourceserver; do
	CGO_ENABLED=0 go build -tags grpcnotrace -trimpath -ldflags='-s -w' -pgo="$bin/release.pgo" -o "$tmp/bin/" "./$bin" || fail "go build ./$bin failed"
	go version -m "$tmp/bin/$bin" | grep -q 'CGO_ENABLED=0' || fail "$bin is not a static (CGO_ENABLED=0) build"
	# -trimpath records the profile by its file name alone.
	go version -m "$tmp/bin/$bin" | grep -q -- "-pgo=\(.*/\)\{0,1\}release.pgo\$" || fail "$bin is not built with its release.pgo"
	"$tmp/bin/$bin" help >/dev/null || fail "$bin help failed"
done

echo "validate-compose: ok"
