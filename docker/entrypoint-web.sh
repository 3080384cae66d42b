#!/bin/sh
# The web role: apply migrations (unless SWARMSCOPE_MIGRATE=0, for the 2nd..nth web replica), then
# Daphne, HTTP and websockets, on $BIND_HOST:$PORT. Liveness: GET /healthz (database and Redis).
# Runs as a plain process too (tests/deploy): PYTHON names the interpreter, the app root is ../.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

if [ -z "${DATABASE_URL:-}" ] || [ -z "${REDIS_URL:-}" ]; then
  echo "entrypoint-web: DATABASE_URL and REDIS_URL must be set (see docker/env.example)" >&2
  exit 2
fi
if [ "${SWARMSCOPE_MIGRATE:-1}" = "1" ]; then
  "$PYTHON" manage.py migrate --noinput
fi
# --proxy-headers (the client's address and scheme from X-Forwarded-*) only behind a TLS proxy that
# every request passes: SWARMSCOPE_TRUST_PROXY_HEADERS=1, as Django's own reading of the header.
case "${SWARMSCOPE_TRUST_PROXY_HEADERS:-0}" in
  1|true|yes|on) set -- --proxy-headers ;;
  *) set -- ;;
esac
exec "$PYTHON" -m daphne "$@" -b "${BIND_HOST:-0.0.0.0}" -p "${PORT:-8000}" \
  webapp.config.asgi:application
