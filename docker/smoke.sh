#!/bin/sh
# Smoke test of the images and the compose file on a machine with a Docker engine (and compose v2):
# builds the `web` and `worker` images (timed; their sizes printed for bench/RESULTS.md), starts
# PostgreSQL, Redis, web and worker, then through the API over plain HTTP on 127.0.0.1:8000 (the
# API is not redirected to HTTPS): /healthz, an upload, a SwarmSim counterfactual job to `done`;
# restarts Redis and does it again; checks that env.example's placeholder secret is refused.
# Everything runs in its own compose project (`swarmscope-smoke`), removed with its volumes at exit.
#
#   sh docker/smoke.sh            # from the repository root
#
# docker/.env: used as it is when present (your deployment's); otherwise made from env.example with
# random secrets for the run and removed after it. Exit status 0 only when every step passed.
set -eu
cd "$(dirname "$0")/.."
PROJECT=swarmscope-smoke
COMPOSE="docker compose -p $PROJECT -f docker/compose.yaml"
BASE=http://127.0.0.1:8000
made_env=0

say() { printf '\n== %s\n' "$*"; }
fail() { printf 'smoke: FAILED: %s\n' "$*" >&2; exit 1; }

cleanup() {
  status=$?
  if [ "$status" -ne 0 ]; then $COMPOSE logs --tail 80 web worker 2>/dev/null || true; fi
  $COMPOSE down -v --remove-orphans >/dev/null 2>&1 || true
  if [ "$made_env" = 1 ]; then rm -f docker/.env; fi
  exit "$status"
}
trap cleanup EXIT INT TERM

command -v docker >/dev/null || fail "no docker client"
docker info >/dev/null 2>&1 || fail "no Docker engine answers (docker info)"
docker compose version >/dev/null 2>&1 || fail "no docker compose (v2) plugin"

if [ ! -f docker/.env ]; then
  made_env=1
  secret=$(python3 -c 'import secrets; print(secrets.token_urlsafe(50))')
  password=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
  sed -e "s|^DJANGO_SECRET_KEY=.*|DJANGO_SECRET_KEY=$secret|" \
      -e "s|^POSTGRES_PASSWORD=.*|POSTGRES_PASSWORD=$password|" \
      -e "s|^ALLOWED_HOSTS=.*|ALLOWED_HOSTS=127.0.0.1,localhost|" \
      docker/env.example > docker/.env
fi

say "build web and worker (PIP_EXTRA_INDEX_URL=${PIP_EXTRA_INDEX_URL-https://download.pytorch.org/whl/cpu})"
started=$(date +%s)
SWARMSCOPE_CODE_VERSION=$(git rev-parse HEAD 2>/dev/null || echo unknown) $COMPOSE build web worker
built=$(date +%s)
for image in swarmscope-web swarmscope-worker; do
  size=$(docker image inspect -f '{{.Size}}' "$image")
  printf 'image %s: %s MB\n' "$image" "$((size / 1000000))"
done
printf 'build time (web + worker, this cache state): %s s\n' "$((built - started))"

say "a placeholder secret key is refused (DJANGO_DEBUG=0)"
if $COMPOSE run --rm --no-deps -e DJANGO_SECRET_KEY=change-me-to-a-long-random-string --entrypoint python web \
    manage.py check >/tmp/swarmscope-smoke-check.log 2>&1; then
  fail "the web image started with env.example's placeholder secret"
fi
grep -q "DJANGO_SECRET_KEY is the placeholder" /tmp/swarmscope-smoke-check.log || fail "refused, but not for the key"

say "start postgres, redis, web, worker"
$COMPOSE up -d --wait postgres redis web worker
curl -fsS "$BASE/healthz" | grep -q '"status": "ok"' || fail "/healthz is not ok"
$COMPOSE exec -T -e DJANGO_SUPERUSER_PASSWORD=smoke-password-1 web \
  python manage.py createsuperuser --noinput --username smoke --email smoke@example.org
TOKEN=$($COMPOSE exec -T web python manage.py create_token smoke | tr -d '\r')
[ -n "$TOKEN" ] || fail "no token"

api() {  # api METHOD PATH [DATA-FILE] -> the JSON answer on stdout; fails on an error status
  if [ $# -eq 3 ]; then
    curl -fsS -X "$1" -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" --data-binary "@$3" "$BASE$2"
  else
    curl -fsS -X "$1" -H "Authorization: Bearer $TOKEN" "$BASE$2"
  fi
}
field() { python3 -c "import json, sys; d = json.load(sys.stdin); print(eval(sys.argv[1], {}, {'d': d}))" "$1"; }

round() {  # round N: upload a SwarmSim episode, run a counterfactual job on it to `done`
  $COMPOSE exec -T web python -c "
import json
from trainer.sim.suites import pivot12_case
case = pivot12_case($1)
pivotal = next(f'message:{case.episode.actions[c].item}' for c, k in zip(case.candidates, case.kinds) if k == 'pivotal')
doc = case.episode.trace.to_dict()
doc['source_id'] = 'smoke-$1'
print(json.dumps({'trace': doc, 'pivotal': pivotal}))" > /tmp/swarmscope-smoke-case.json
  python3 -c "import json; json.dump(json.load(open('/tmp/swarmscope-smoke-case.json'))['trace'], open('/tmp/swarmscope-smoke-trace.json', 'w'))"
  trace=$(curl -fsS -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/octet-stream" \
    --data-binary @/tmp/swarmscope-smoke-trace.json "$BASE/api/traces/upload/?filename=smoke-$1.json" \
    | field "d['files'][0]['traces'][0]['id']")
  python3 -c "
import json
case = json.load(open('/tmp/swarmscope-smoke-case.json'))
json.dump({'intervention': {'kind': 'remove', 'events': [case['pivotal']]}, 'n': 16, 'seed': $1, 'backend': 'sim'},
          open('/tmp/swarmscope-smoke-job.json', 'w'))"
  job=$(api POST "/api/traces/$trace/counterfactuals/" /tmp/swarmscope-smoke-job.json | field "d['id']")
  for _ in $(seq 120); do
    status=$(api GET "/api/jobs/$job/" | field "d['status']")
    [ "$status" = done ] && { echo "round $1: trace $trace, job $job done"; return 0; }
    [ "$status" = failed ] && fail "job $job failed: $(api GET "/api/jobs/$job/" | field "d['error']")"
    sleep 2
  done
  fail "job $job not done after 240 s (status $status)"
}

say "round 1: upload and a counterfactual job"
round 1
say "restart Redis (empty: no persistence), then round 2"
$COMPOSE restart redis
sleep 5
round 2
say "smoke: every step passed"
