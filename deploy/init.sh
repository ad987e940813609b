# The init job of docker-compose.yml (deploy/Dockerfile, target init): runs
# once, before any token service replica starts.
#
# 1. Signing keys: generated into the keys volume unless a key set is there
#    already. An existing file is never touched, not even a broken one: the
#    token service then refuses to start and says why. Rotation is an
#    operator's act ('keys generate --rotate', deploy/docs/signing-keys.md).
# 2. The sandbox organisation and its demo clients: 'sandbox seed' is
#    idempotent; it prints the secrets of the clients it creates, once, to
#    this job's log (docker compose logs init).
set -eu

keys="${KEYS_FILE:-/keys/jwks.json}"
if [ -e "$keys" ]; then
	echo "init: $keys exists; keeping its keys"
else
	/authserver keys generate --out "$keys"
fi

# Redis may answer before the rest of its group: with the sentinel profile
# the sentinels start together with this job. Wait (30 s at most) until the
# registry answers through REDIS_URL.
tries=0
until /authserver orgs list >/dev/null 2>&1; do
	tries=$((tries + 1))
	if [ "$tries" -ge 30 ]; then
		/authserver orgs list >/dev/null
		exit 1
	fi
	sleep 1
done

# On a Sentinel or Cluster URL every change the seed makes waits for a
# replica's confirmation (deploy/docs/scaling.md, "What a replica
# confirmation guarantees"), 2 s by
# default. A replica that starts with this job confirms nothing before its
# first full sync, which Redis delays by repl-diskless-sync-delay (5 s): so
# the seed waits up to INIT_CONFIRM_TIMEOUT (60s) for it, unless REDIS_URL
# sets confirm_timeout itself. Retrying the seed instead would lose the
# secret of a client created but not confirmed (a later seed finds the
# client and cannot show its secret). On a single node nothing waits.
case "${REDIS_URL:-}" in
"" | *confirm_timeout=*) ;;
*\?*) REDIS_URL="$REDIS_URL&confirm_timeout=${INIT_CONFIRM_TIMEOUT:-60s}" ;;
*) REDIS_URL="$REDIS_URL?confirm_timeout=${INIT_CONFIRM_TIMEOUT:-60s}" ;;
esac
export REDIS_URL
/authserver sandbox seed
