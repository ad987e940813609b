#!/usr/bin/env bash
# The docker compose stack, run for real: CI's step "docker compose stack"
# (.ci/run), and the same from a developer's shell as root:
#
#   bash deploy/compose-ci/run.sh
#
# CI's machines reach Debian's archive and the Go module proxy but no image
# registry, so this script makes the images docker-compose.yml and
# deploy/Dockerfile name, under exactly those names, from Debian packages
# (standins/*/Dockerfile, on a base made by debootstrap --variant=minbase
# bookworm and docker import). Users who can pull get the real images; the
# compose file and the Dockerfile are not changed for CI.
#
# Then, with the classic builder (DOCKER_BUILDKIT=0, as BuildKit's frontend
# image comes from Docker Hub), it runs the partner journey through the
# edge's published port, on loopback:
#
#   1. single node (docker-compose.yml's default): up --build with two
#      replicas of each pool; a token for the seeded sandbox client (its secret
#      from `logs init`), GET /api/v1/me/ 200, the documentation written with
#      PUBLIC_BASE_URL whatever the Host header; `exec authserver
#      /authserver clients rotate-secret ID`; the old token 401, the old
#      secret 401, a token for the new secret 200 and /me 200;
#      then mutual TLS at the edge (EDGE_MTLS=on, CLIENT_CA_FILE and
#      MTLS_BASE_URL, with certificates made here by openssl into
#      deploy/tls/ and removed on exit): the metadata's aliases, a
#      tls_client_auth client's certificate-bound token by curl --cert,
#      /me 200 over its certificate and 401 over another one or the plain
#      site, and its certificate name changed in place (`clients
#      rotate-keys ID --tls-san-dns NAME`): the old certificate and its
#      token refused, the new one's token 200;
#   2. the sentinel profile from empty (down -v first), which must come up on
#      the first `up`, and the same journey.
#
# It installs docker.io, docker-compose, debootstrap, curl, jq and openssl
# when they are missing; starts dockerd when none is running and stops it on exit (a
# running one is left running); removes the stack and its volumes on exit.
# The base image and the stand-ins stay in Docker's store (and the
# debootstrap tarball in COMPOSE_CI_CACHE), so a second run builds only what
# changed: about 6 min from nothing, 70 s warm (deploy/docs/docker-compose.md, "CI").
# Where the machine's open-file hard limit is below the compose file's
# ulimits (CI's), a generated override gives the containers that limit. Every wait is bounded; any failure exits
# non-zero after printing the containers' logs.
#
# Environment: COMPOSE_CI_CACHE (default ~/.cache/authplatform-compose-ci),
# COMPOSE_CI_PORT (the edge's published port; default: a free one from
# 18480), COMPOSE_CI_MIRROR (the Debian mirror for debootstrap; default: the
# first one in this machine's apt sources).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

start=$SECONDS
mark=$SECONDS
step() {
	printf '== [%4ds] %s\n' $((SECONDS - start)) "$*"
	mark=$SECONDS
}
took() { printf '   ... %ds\n' $((SECONDS - mark)); }
fail() {
	printf 'compose-ci: FAIL: %s\n' "$*" >&2
	exit 1
}

[ "$(id -u)" -eq 0 ] || fail "run as root (it installs packages, starts dockerd and runs debootstrap)"

cache="${COMPOSE_CI_CACHE:-${HOME:-/root}/.cache/authplatform-compose-ci}"
mkdir -p "$cache"
tmp="$(mktemp -d)"

# --- Tools -------------------------------------------------------------------

apt_updated=""
need() { # need COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 && return
	if [ -z "$apt_updated" ]; then
		apt-get update -q >/dev/null
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$2" >/dev/null
	command -v "$1" >/dev/null 2>&1 || fail "$1 is missing and installing $2 did not provide it"
}
step "tools: docker.io, docker-compose, debootstrap, curl, jq"
need dockerd docker.io
need docker docker.io
need docker-compose docker-compose
need debootstrap debootstrap
need curl curl
need jq jq
need openssl openssl
command -v go >/dev/null 2>&1 || PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null 2>&1 || fail "go is missing (the golang stand-in is the host's toolchain)"
took

# The classic builder: BuildKit fetches its Dockerfile frontend and helper
# images from Docker Hub.
export DOCKER_BUILDKIT=0 COMPOSE_DOCKER_CLI_BUILD=0

# `docker compose` where the plugin exists, else docker-compose (Debian
# bookworm's 1.29, which reads the same file).
if docker compose version >/dev/null 2>&1; then
	compose_cmd=(docker compose)
else
	compose_cmd=(docker-compose)
fi
project=authplatform-compose-ci
export TAG=ci
# This machine's open-file hard limit may be below the ulimits
# docker-compose.yml gives the servers and the edge (65536 and 131072), and
# this run may not raise it (CI's runs without CAP_SYS_RESOURCE): runc then
# refuses to start the containers. Only then, an override file gives them the
# machine's hard limit; everything else is the compose file as users run it.
overrides=()
nofile="$(ulimit -Hn)"
if [ "$nofile" != unlimited ] && [ "$nofile" -lt 131072 ]; then
	limit="ulimits: {nofile: {soft: $nofile, hard: $nofile}}"
	printf 'services:\n  authserver: {%s}\n  resourceserver: {%s}\n  edge: {%s}\n' \
		"$limit" "$limit" "$limit" >"$tmp/ulimits.yml"
	overrides=(-f "$tmp/ulimits.yml")
fi

# stack single|sentinel SECONDS ARGS...: one compose command on the stack
# (the sentinel profile with its env file), bounded in time.
stack() {
	local mode=$1 t=$2
	shift 2
	[ "$mode" = single ] || set -- --env-file deploy/sentinel.env --profile sentinel "$@"
	timeout "$t" "${compose_cmd[@]}" -p "$project" -f docker-compose.yml "${overrides[@]}" "$@"
}

# --- dockerd -----------------------------------------------------------------

dockerd_pid=""
had_docker0=""
stack_up=""
tls_made=()
cleanup() {
	local status=$?
	set +e
	if [ -n "$stack_up" ]; then
		if [ "$status" -ne 0 ]; then
			printf '\n== containers and logs (failure)\n' >&2
			stack sentinel 60 ps >&2
			stack sentinel 60 logs --no-color --tail=150 2>&1 | sed 's/svc_cs_[A-Za-z0-9]*/svc_cs_.../g' >&2
		fi
		printf '== down -v\n'
		stack sentinel 120 down -v --remove-orphans >/dev/null 2>&1
	fi
	if [ -n "$dockerd_pid" ]; then
		printf '== stopping the dockerd this run started (pid %s)\n' "$dockerd_pid"
		kill "$dockerd_pid" 2>/dev/null
		for _ in $(seq 60); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.5; done
		kill -0 "$dockerd_pid" 2>/dev/null && kill -9 "$dockerd_pid" 2>/dev/null
		# dockerd leaves its firewall rules (FORWARD's policy DROP among
		# them) and its bridge behind: put the machine back as it was.
		[ -s "$tmp/iptables" ] && iptables-restore <"$tmp/iptables"
		[ -s "$tmp/ip6tables" ] && ip6tables-restore <"$tmp/ip6tables"
		[ -n "$had_docker0" ] || ip link delete docker0 2>/dev/null
		if [ "$status" -ne 0 ]; then
			echo "-- dockerd log (last 30 lines)" >&2
			tail -n 30 "$cache/dockerd.log" >&2
		fi
	fi
	# The certificates this run made in deploy/tls/ (mtls_pki).
	[ ${#tls_made[@]} -eq 0 ] || rm -f "${tls_made[@]}"
	rm -rf "$tmp"
	printf '== compose-ci: %s after %ds\n' "$([ "$status" -eq 0 ] && echo ok || echo "FAILED ($status)")" $((SECONDS - start))
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "dockerd"
if docker info >/dev/null 2>&1; then
	echo "   a Docker daemon is running already; it stays running"
else
	iptables-save >"$tmp/iptables" 2>/dev/null || true
	ip6tables-save >"$tmp/ip6tables" 2>/dev/null || true
	ip link show docker0 >/dev/null 2>&1 && had_docker0=1
	dockerd >"$cache/dockerd.log" 2>&1 &
	dockerd_pid=$!
	for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
	docker info >/dev/null 2>&1 || fail "dockerd did not answer within 30 s ($cache/dockerd.log)"
	echo "   started dockerd (pid $dockerd_pid, log $cache/dockerd.log)"
fi
echo "   server $(docker version --format '{{.Server.Version}}'), $("${compose_cmd[@]}" version --short 2>/dev/null || echo compose)"
took

# --- Stand-in images ---------------------------------------------------------

# The names to stand in for, read from the files users run.
go_version="$(awk -F= '/^ARG GO_VERSION=/ { print $2 }' deploy/Dockerfile)"
grep -q '^FROM golang:${GO_VERSION}-bookworm ' deploy/Dockerfile || fail "deploy/Dockerfile: build stage is no longer golang:\${GO_VERSION}-bookworm"
golang_tag="golang:${go_version}-bookworm"
distroless_tags="$(awk '$1 == "FROM" && $2 ~ /^gcr.io\/distroless\// { print $2 }' deploy/Dockerfile | sort -u)"
redis_tags="$(awk '$1 == "image:" && $2 ~ /^redis:/ { print $2 }' docker-compose.yml | sort -u)"
caddy_tags="$(awk '$1 == "image:" && $2 ~ /^caddy:/ { print $2 }' docker-compose.yml | sort -u)"
[ -n "$go_version" ] && [ -n "$distroless_tags" ] && [ -n "$redis_tags" ] && [ -n "$caddy_tags" ] ||
	fail "cannot read the image names from deploy/Dockerfile and docker-compose.yml"

# The base: Debian bookworm, minbase, with the packages the stand-ins use.
# Everything is installed here, by debootstrap on the host, so that no image
# build needs the network.
packages="ca-certificates,tzdata,busybox-static,wget,redis-server,redis-tools,redis-sentinel,caddy"
base_key="$(printf 'bookworm minbase %s' "$packages" | sha256sum | cut -c1-12)"
base_tag="authplatform-ci/debian:bookworm-minbase-$base_key"

# The Debian mirror: this machine's own apt configuration says which.
mirror() {
	local m=""
	if [ -f /etc/apt/sources.list ]; then
		m="$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\//) { print $i; exit } }' /etc/apt/sources.list)"
	fi
	if [ -z "$m" ]; then
		m="$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk '$1 == "URIs:" && $2 !~ /security/ { print $2; exit }')"
	fi
	printf '%s' "$m"
}

step "base image $base_tag"
if docker image inspect "$base_tag" >/dev/null 2>&1; then
	echo "   present"
else
	tarball="$cache/bookworm-minbase-$base_key.tar"
	if [ ! -s "$tarball" ]; then
		m="${COMPOSE_CI_MIRROR:-$(mirror)}"
		[ -n "$m" ] || fail "no Debian mirror in /etc/apt/sources.list or /etc/apt/sources.list.d/*.sources (set COMPOSE_CI_MIRROR)"
		echo "   debootstrap --variant=minbase bookworm from $m"
		rootfs="$tmp/rootfs"
		if ! timeout 900 debootstrap --variant=minbase --include="$packages" bookworm "$rootfs" "$m" >"$tmp/debootstrap.log" 2>&1; then
			tail -n 30 "$tmp/debootstrap.log" >&2
			tail -n 30 "$rootfs/debootstrap/debootstrap.log" >&2 2>/dev/null || true
			fail "debootstrap failed"
		fi
		rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
		tar -C "$rootfs" --numeric-owner -cf "$tarball.part" .
		mv "$tarball.part" "$tarball"
		rm -rf "$rootfs"
	fi
	docker import "$tarball" "$base_tag" >/dev/null
	echo "   imported $(du -h "$tarball" | cut -f1) from $tarball"
fi
took

build() { # build TAG DOCKERFILE CONTEXT [docker build options]
	local tag=$1 file=$2 context=$3
	shift 3
	if ! timeout 600 docker build -q -t "$tag" -f "$file" "$@" "$context" >"$tmp/build.log" 2>&1; then
		cat "$tmp/build.log" >&2
		fail "docker build $tag failed"
	fi
}

step "stand-ins: $golang_tag"
# The toolchain layer: the host's Go, which must be the version go.mod and
# the Dockerfile name. 270 MB of context: built only when missing.
host_go="$(go env GOVERSION)"
[ "$host_go" = "go$go_version" ] || fail "the host's Go is $host_go; deploy/Dockerfile wants go$go_version"
toolchain_tag="authplatform-ci/go:$go_version-$base_key"
if docker image inspect "$toolchain_tag" >/dev/null 2>&1; then
	echo "   toolchain layer present"
else
	build "$toolchain_tag" "$here/standins/golang/Dockerfile" "$(go env GOROOT)" --build-arg BASE="$base_tag"
fi
# The module layer, rebuilt when go.sum changes.
sum_key="$(cat go.mod go.sum | sha256sum | cut -c1-16)"
if [ "$(docker image inspect -f '{{index .Config.Labels "gosum"}}' "$golang_tag" 2>/dev/null)" = "$sum_key" ]; then
	echo "   module layer present (go.mod and go.sum unchanged)"
else
	modcache="$cache/gomodcache"
	rm -rf "$modcache"
	# From the host's module cache where it has them, else from its GOPROXY.
	GOMODCACHE="$modcache" GOFLAGS=-modcacherw \
		GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" \
		timeout 300 go mod download
	build "$golang_tag" "$here/standins/golang/modules.Dockerfile" "$modcache" \
		--build-arg TOOLCHAIN="$toolchain_tag" --label gosum="$sum_key"
	rm -rf "$modcache"
fi
took

step "stand-ins: $(echo $distroless_tags $redis_tags $caddy_tags)"
for t in $distroless_tags; do
	case "$t" in
	*:debug-nonroot) target=debug-nonroot ;;
	*:nonroot) target=nonroot ;;
	*) fail "no stand-in for $t (deploy/compose-ci/standins/distroless has nonroot and debug-nonroot)" ;;
	esac
	build "$t" "$here/standins/distroless/Dockerfile" "$here/standins/distroless" --build-arg BASE="$base_tag" --target "$target"
done
for t in $redis_tags; do
	build "$t" "$here/standins/redis/Dockerfile" "$here/standins/redis" --build-arg BASE="$base_tag"
done
for t in $caddy_tags; do
	build "$t" "$here/standins/caddy/Dockerfile" "$here/standins/caddy" --build-arg BASE="$base_tag"
done
took

# --- The journey -------------------------------------------------------------

port="${COMPOSE_CI_PORT:-}"
if [ -z "$port" ]; then
	for p in $(seq 18480 18580); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			port=$p
			break
		fi
	done
fi
[ -n "$port" ] || fail "no free port in 18480-18580"
tls_port=""
for p in $(seq $((port + 1)) 18599); do
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		tls_port=$p
		break
	fi
done
[ -n "$tls_port" ] || fail "no free port for the mutual-TLS site in $((port + 1))-18599"
export EDGE_PORT="$port" PUBLIC_BASE_URL="http://localhost:$port"
base="http://127.0.0.1:$port"
mtls_base="https://localhost:$tls_port"
echo "   the edge will publish $port (and $tls_port for mutual TLS); PUBLIC_BASE_URL=$PUBLIC_BASE_URL"
[ ${#overrides[@]} -eq 0 ] || echo "   open files: this machine's hard limit, $nofile, for authserver, resourceserver and edge (docker-compose.yml asks more)"

# wait_http URL SECONDS: until the URL answers 200.
wait_http() {
	local deadline=$((SECONDS + $2))
	until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$1")" = 200 ]; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 1
	done
}

# status EXPECTED WHAT CURL-ARGS...: one request, its status checked; the body
# is left in $tmp/body.
status() {
	local want=$1 what=$2 got
	shift 2
	got="$(curl -s -o "$tmp/body" -w '%{http_code}' --max-time 10 "$@")"
	if [ "$got" != "$want" ]; then
		printf '   %s: got %s, want %s: %s\n' "$what" "$got" "$want" "$(head -c 300 "$tmp/body")" >&2
		fail "$what"
	fi
	printf '   %-52s %s\n' "$what" "$got"
}

token() { # token ID SECRET EXPECTED: sets $access_token on 200
	status "$3" "token (client_credentials)${4:+, $4}" -u "$1:$2" -d grant_type=client_credentials "$base/api/v1/oauth/token/"
	access_token=""
	[ "$3" != 200 ] || access_token="$(jq -er .access_token "$tmp/body")"
}

# journey single|sentinel: the partner journey against the running stack.
journey() {
	local mode=$1 id secret old_token new_secret
	# The seed prints each client it creates, then its secret on the next
	# line: the hospital client's.
	stack "$mode" 60 logs --no-color init >"$tmp/init.log" 2>&1
	id="$(sed -n 's/.*| *hospital  *\(svc_[A-Za-z0-9_]*\) .*/\1/p' "$tmp/init.log" | head -n 1)"
	secret="$(grep -A1 -E '\| *hospital +svc_' "$tmp/init.log" | sed -n 's/.*client_secret: *\(svc_cs_[A-Za-z0-9]*\).*/\1/p' | head -n 1)"
	if [ -z "$id" ] || [ -z "$secret" ]; then
		sed 's/svc_cs_[A-Za-z0-9]*/svc_cs_.../g' "$tmp/init.log" >&2
		fail "no sandbox client and secret in the init job's log"
	fi
	echo "   sandbox client $id (secret from 'logs init')"

	token "$id" "$secret" 200
	old_token=$access_token
	status 200 "GET /api/v1/me/" -H "Authorization: Bearer $old_token" "$base/api/v1/me/"
	jq -e --arg id "$id" '.. | strings | select(. == $id)' "$tmp/body" >/dev/null || fail "/api/v1/me/ does not name $id"
	# BASE_URL: the documentation names PUBLIC_BASE_URL, not the Host header.
	status 200 "GET /docs/quickstart.md (Host: elsewhere.example)" -H "Host: elsewhere.example" "$base/docs/quickstart.md"
	grep -qF "$PUBLIC_BASE_URL" "$tmp/body" || fail "the documentation does not name PUBLIC_BASE_URL $PUBLIC_BASE_URL"
	! grep -q "elsewhere.example" "$tmp/body" || fail "the documentation took its base URL from the Host header"

	stack "$mode" 60 exec -T authserver /authserver clients rotate-secret "$id" >"$tmp/rotate.log" 2>&1 ||
		{ sed 's/svc_cs_[A-Za-z0-9]*/svc_cs_.../g' "$tmp/rotate.log" >&2; fail "clients rotate-secret"; }
	new_secret="$(sed -n 's/^client_secret: *\(svc_cs_[A-Za-z0-9]*\).*/\1/p' "$tmp/rotate.log")"
	[ -n "$new_secret" ] && [ "$new_secret" != "$secret" ] || fail "rotate-secret printed no new secret"
	echo "   exec authserver /authserver clients rotate-secret $id: new secret"

	status 401 "GET /api/v1/me/ with the old token" -H "Authorization: Bearer $old_token" "$base/api/v1/me/"
	token "$id" "$secret" 401 "old secret"
	token "$id" "$new_secret" 200 "new secret"
	status 200 "GET /api/v1/me/ with the new token" -H "Authorization: Bearer $access_token" "$base/api/v1/me/"
}

# mtls_pki: a server CA and the edge's certificate for localhost
# (deploy/tls/server.pem, server-key.pem), a partner CA
# (deploy/tls/client-ca.pem) and, in $tmp/pki, client certificates it
# issued for ward.example and ward2.example and a self-signed one. The
# containers run as other users: the files are world-readable, and removed
# on exit. deploy/tls/ holding files of its own is a failure, not
# overwritten.
pki="$tmp/pki"
mtls_pki() {
	local tls_dir="$root/deploy/tls" f
	for f in server.pem server-key.pem client-ca.pem; do
		[ ! -e "$tls_dir/$f" ] || fail "deploy/tls/$f exists: move it away for this run (it would be replaced)"
	done
	mkdir -p "$pki"
	ossl() { openssl "$@" >>"$pki/openssl.log" 2>&1 || { cat "$pki/openssl.log" >&2; fail "openssl $1"; }; }
	ca() { # ca NAME CN
		ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$2" \
			-keyout "$pki/$1-key.pem" -out "$pki/$1.pem"
	}
	leaf() { # leaf CA NAME CN EXTENSIONS
		ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" -keyout "$pki/$2-key.pem" -out "$pki/$2.csr"
		printf '%s\n' "$4" >"$pki/$2.ext"
		ossl x509 -req -in "$pki/$2.csr" -CA "$pki/$1.pem" -CAkey "$pki/$1-key.pem" -CAcreateserial -days 2 \
			-extfile "$pki/$2.ext" -out "$pki/$2.pem"
	}
	ca server-ca "compose-ci server CA"
	leaf server-ca server localhost $'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth'
	ca client-ca "compose-ci partner CA"
	leaf client-ca ward ward $'subjectAltName=DNS:ward.example\nextendedKeyUsage=clientAuth'
	leaf client-ca ward2 ward $'subjectAltName=DNS:ward2.example\nextendedKeyUsage=clientAuth'
	ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=ward" \
		-addext "subjectAltName=DNS:ward.example" -addext "extendedKeyUsage=clientAuth" -keyout "$pki/self-key.pem" -out "$pki/self.pem"
	tls_made=("$tls_dir/server.pem" "$tls_dir/server-key.pem" "$tls_dir/client-ca.pem")
	cp "$pki/server.pem" "$tls_dir/server.pem"
	cp "$pki/server-key.pem" "$tls_dir/server-key.pem"
	cp "$pki/client-ca.pem" "$tls_dir/client-ca.pem"
	chmod 0644 "${tls_made[@]}"
}

# mtls_journey: a tls_client_auth partner through the edge's mutual-TLS
# site (deploy/docs/mtls.md), on the running single-node stack.
mtls_journey() {
	local id tok old_tok
	local tls=(--cacert "$pki/server-ca.pem")
	local ward=("${tls[@]}" --cert "$pki/ward.pem" --key "$pki/ward-key.pem")
	local ward2=("${tls[@]}" --cert "$pki/ward2.pem" --key "$pki/ward2-key.pem")
	local self=("${tls[@]}" --cert "$pki/self.pem" --key "$pki/self-key.pem")
	local grant=(-d grant_type=client_credentials)
	status 200 "GET /.well-known/oauth-authorization-server" "$base/.well-known/oauth-authorization-server"
	jq -e --arg t "$mtls_base/api/v1/oauth/token/" '.tls_client_certificate_bound_access_tokens == true and
		.mtls_endpoint_aliases.token_endpoint == $t and (.token_endpoint_auth_methods_supported | index("tls_client_auth"))' \
		"$tmp/body" >/dev/null || fail "the metadata lacks the mutual-TLS members: $(cat "$tmp/body")"
	stack single 60 exec -T authserver /authserver orgs create --slug ward --name "St Elsewhere" --environment live >"$tmp/org.log" 2>&1 ||
		{ cat "$tmp/org.log" >&2; fail "orgs create"; }
	stack single 60 exec -T authserver /authserver clients create --org ward --name Ward --audience hospital \
		--scopes patients.read --auth tls_client_auth --tls-san-dns ward.example --json >"$tmp/client.json" 2>"$tmp/client.log" ||
		{ cat "$tmp/client.log" >&2; fail "clients create --auth tls_client_auth"; }
	id="$(jq -er .client_id "$tmp/client.json")" || fail "clients create printed no client_id"
	echo "   exec authserver /authserver clients create --auth tls_client_auth --tls-san-dns ward.example: $id"

	status 200 "token over mTLS (tls_client_auth, ward.example)" "${ward[@]}" "${grant[@]}" -d client_id="$id" "$mtls_base/api/v1/oauth/token/"
	tok="$(jq -er .access_token "$tmp/body")"
	status 200 "GET /api/v1/me/ over the same certificate" "${ward[@]}" -H "Authorization: Bearer $tok" "$mtls_base/api/v1/me/"
	jq -e --arg id "$id" '.. | strings | select(. == $id)' "$tmp/body" >/dev/null || fail "/api/v1/me/ does not name $id"
	status 401 "GET /api/v1/me/ over another certificate" "${self[@]}" -H "Authorization: Bearer $tok" "$mtls_base/api/v1/me/"
	status 401 "GET /api/v1/me/ on the plain site" -H "Authorization: Bearer $tok" "$base/api/v1/me/"
	status 401 "token over mTLS, a self-signed certificate" "${self[@]}" "${grant[@]}" -d client_id="$id" "$mtls_base/api/v1/oauth/token/"
	status 401 "token on the plain site, no certificate" "${grant[@]}" -d client_id="$id" "$base/api/v1/oauth/token/"

	old_tok=$tok
	stack single 60 exec -T authserver /authserver clients rotate-keys "$id" --tls-san-dns ward2.example >"$tmp/rename.log" 2>&1 ||
		{ cat "$tmp/rename.log" >&2; fail "clients rotate-keys --tls-san-dns"; }
	echo "   exec authserver /authserver clients rotate-keys $id --tls-san-dns ward2.example"
	status 401 "GET /api/v1/me/ with the old name's token" "${ward[@]}" -H "Authorization: Bearer $old_tok" "$mtls_base/api/v1/me/"
	status 401 "token over mTLS, the old name's certificate" "${ward[@]}" "${grant[@]}" -d client_id="$id" "$mtls_base/api/v1/oauth/token/"
	status 200 "token over mTLS, the new name's certificate" "${ward2[@]}" "${grant[@]}" -d client_id="$id" "$mtls_base/api/v1/oauth/token/"
	tok="$(jq -er .access_token "$tmp/body")"
	status 200 "GET /api/v1/me/ with the new name's token" "${ward2[@]}" -H "Authorization: Bearer $tok" "$mtls_base/api/v1/me/"
}

# up single|sentinel ARGS...: one `up -d`, which must succeed the first
# time, then the edge's healthz.
up() {
	local mode=$1
	shift
	stack_up=1
	if ! stack "$mode" 600 up -d "$@" >"$tmp/up.log" 2>&1; then
		cat "$tmp/up.log" >&2
		fail "up failed"
	fi
	wait_http "$base/healthz" 120 || fail "the edge did not answer /healthz within 120 s"
	stack "$mode" 60 ps
}

step "single node: up -d --build --scale authserver=2 --scale resourceserver=2 (EDGE_MTLS=on)"
mtls_pki
export EDGE_MTLS=on EDGE_TLS_PORT="$tls_port" CLIENT_CA_FILE=/tls/client-ca.pem MTLS_BASE_URL="$mtls_base"
up single --build --scale authserver=2 --scale resourceserver=2
took
step "single node: the partner journey through $base"
journey single
took
step "single node: mutual TLS through $mtls_base"
mtls_journey
# Docker's userland proxy: a connection to the published port from loopback
# reaches the edge from the network's gateway, not from the client
# (deploy/docs/docker-compose.md, "The edge").
peer="$(stack single 60 logs --no-color edge 2>/dev/null | sed -n 's/.*"remote_ip":"\([^"]*\)".*/\1/p' | tail -n 1 || true)"
echo "   the edge saw this run's requests from ${peer:-?} (Docker's userland proxy; deploy/docs/docker-compose.md)"
took

step "down -v"
stack sentinel 120 down -v --remove-orphans >/dev/null 2>&1
stack_up=""
unset EDGE_MTLS EDGE_TLS_PORT CLIENT_CA_FILE MTLS_BASE_URL
took

step "sentinel profile from empty: --env-file deploy/sentinel.env --profile sentinel up -d (first try)"
up sentinel
took
step "sentinel profile: the partner journey through $base"
journey sentinel
took
