#!/bin/sh
# The CPU worker role: Celery on $CELERY_QUEUES (default: default,rollouts-cpu,training), node name
# $CELERY_NODE_NAME@<host>. CELERY_BEAT=1 also runs the periodic reaper that re-queues the chunks of
# dead workers' jobs: set it on exactly one worker of the deployment.
# Runs as a plain process too (tests/deploy): PYTHON names the interpreter, the app root is ../.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

# REDIS_URL too where the broker is RabbitMQ: workers send job progress through the channel layer.
if [ -z "${DATABASE_URL:-}" ] || [ -z "${REDIS_URL:-}" ]; then
  echo "entrypoint-worker: DATABASE_URL and REDIS_URL must be set (see docker/env.example)" >&2
  exit 2
fi
set -- -Q "${CELERY_QUEUES:-default,rollouts-cpu,training}" \
  --hostname "${CELERY_NODE_NAME:-worker}@%h" \
  --concurrency "${CELERY_CONCURRENCY:-2}" \
  --loglevel "${SWARMSCOPE_LOG_LEVEL:-INFO}" "$@"
if [ "${CELERY_BEAT:-0}" = "1" ]; then
  set -- "$@" -B --schedule "${SWARMSCOPE_DATA_DIR:-/data}/celerybeat-schedule"
fi
exec "$PYTHON" -m celery -A webapp.config.celery worker "$@"
