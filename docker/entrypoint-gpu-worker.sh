#!/bin/sh
# The GPU node's worker role: Celery on rollouts-gpu, whose `openai` rollout backend calls the
# `vllm serve` beside it at SWARMSCOPE_OPENAI_BASE_URL. It waits (up to VLLM_WAIT_S, default 900 s:
# a model loads for minutes) until that server lists SWARMSCOPE_OPENAI_MODEL, and fails with the
# reason otherwise, so a misnamed model stops the container instead of failing every job.
# Runs as a plain process too (tests/deploy): PYTHON names the interpreter, the app root is ../.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"

if [ -z "${SWARMSCOPE_OPENAI_BASE_URL:-}" ] || [ -z "${SWARMSCOPE_OPENAI_MODEL:-}" ]; then
  echo "entrypoint-gpu-worker: SWARMSCOPE_OPENAI_BASE_URL and SWARMSCOPE_OPENAI_MODEL must be set (see docker/env.example)" >&2
  exit 2
fi
"$PYTHON" docker/wait_for_openai.py --timeout "${VLLM_WAIT_S:-900}" \
  "$SWARMSCOPE_OPENAI_BASE_URL" "$SWARMSCOPE_OPENAI_MODEL"
CELERY_QUEUES="${CELERY_QUEUES:-rollouts-gpu}" CELERY_NODE_NAME="${CELERY_NODE_NAME:-gpu-worker}" \
  exec docker/entrypoint-worker.sh "$@"
