# The init job of docker-compose.yml (deploy/Dockerfile, target init): runs
# once, before any token service replica starts.
#
# 1. Signing keys: generated into the keys volume unless a key set is there
#    already. An existing file is never touched, not even a broken one: the
#    token service then refuses to start and says why. Rotation is an
#    operator's act ('keys generate --rotate', deploy/README.md).
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
/authserver sandbox seed
