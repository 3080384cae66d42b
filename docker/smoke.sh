#!/bin/sh
# Smoke test of the images and the compose file on a machine with a Docker engine (and compose v2):
# builds the `web` and `worker` images (timed; their sizes printed for bench/RESULTS.md), checks
# that env.example's placeholder secret is refused, starts PostgreSQL, Redis, web, worker and
# otlp-grpc, then through the API over plain HTTP on 127.0.0.1 (not redirected to HTTPS): /healthz,
# an upload, a SwarmSim counterfactual job to `done`; a login through the login form (its session
# opens the trace's page, no session is redirected); the trace's websocket (handshake with the
# token, the snapshot as first message); one span over OTLP/gRPC to `otlp-grpc`; restarts Redis
# and runs the job round again. Every step is timed.
# Everything runs in its own compose project (`swarmscope-smoke`), removed with its volumes at exit.
#
#   sh docker/smoke.sh            # from the repository root
#
# docker/.env: used as it is when present (your deployment's); otherwise made from env.example with
# random secrets for the run and removed after it. Exit status 0 only when every step passed.
# SMOKE_WEB_PORT, SMOKE_OTLP_GRPC_PORT: the host ports web and otlp-grpc are published on (default:
# free ones, so that a deployment or a dev server on 8000 / 4317 is left alone).
# SMOKE_BUILD_NETWORK: the network the image builds run on (e.g. `host` where the daemon has no
# default bridge: dockerd --bridge=none; the stack itself runs on its own compose network).
# PIP_EXTRA_INDEX_URL: as for compose (PyTorch's CPU wheels by default; a mirror of them works).
set -eu
cd "$(dirname "$0")/.."
PROJECT=swarmscope-smoke
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
SWARMSCOPE_WEB_PORT=${SMOKE_WEB_PORT:-$(free_port)}
SWARMSCOPE_OTLP_GRPC_PORT=${SMOKE_OTLP_GRPC_PORT:-$(free_port)}
export SWARMSCOPE_WEB_PORT SWARMSCOPE_OTLP_GRPC_PORT
BASE=http://127.0.0.1:$SWARMSCOPE_WEB_PORT
COMPOSE="docker compose -p $PROJECT -f docker/compose.yaml"
override=""
if [ -n "${SMOKE_BUILD_NETWORK:-}" ]; then
  override=$(mktemp /tmp/swarmscope-smoke-XXXXXX.yaml)
  printf 'services:\n  web: {build: {network: %s}}\n  worker: {build: {network: %s}}\n' \
    "$SMOKE_BUILD_NETWORK" "$SMOKE_BUILD_NETWORK" > "$override"
  COMPOSE="$COMPOSE -f $override"
fi
made_env=0
t0=$(date +%s)

step=""
say() {  # say TITLE: ends the step before (prints its time), starts TITLE
  now=$(date +%s)
  [ -z "$step" ] || printf -- '-- %s: %s s\n' "$step" "$((now - step_start))"
  step=$*
  step_start=$now
  printf '\n== %s\n' "$*"
}
fail() { printf 'smoke: FAILED: %s\n' "$*" >&2; exit 1; }

cleanup() {
  status=$?
  if [ "$status" -ne 0 ]; then $COMPOSE logs --tail 80 web worker 2>/dev/null || true; fi
  $COMPOSE down -v --remove-orphans >/dev/null 2>&1 || true
  if [ "$made_env" = 1 ]; then rm -f docker/.env; fi
  rm -f /tmp/swarmscope-smoke-check.log /tmp/swarmscope-smoke-case.json /tmp/swarmscope-smoke-trace.json \
    /tmp/swarmscope-smoke-job.json ${override:+"$override"}
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

say "start postgres, redis, web, worker, otlp-grpc"
$COMPOSE up -d --wait postgres redis web worker otlp-grpc
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
    [ "$status" = "done" ] && { echo "round $1: trace $trace, job $job done"; LAST_TRACE=$trace; return 0; }
    [ "$status" = failed ] && fail "job $job failed: $(api GET "/api/jobs/$job/" | field "d['error']")"
    sleep 2
  done
  fail "job $job not done after 240 s (status $status)"
}

say "round 1: upload and a counterfactual job"
round 1
say "login in a browser's way, as behind the TLS proxy (X-Forwarded-Proto: https, which env.example trusts)"
headers=$(mktemp)
proxied() { curl -sS -H "X-Forwarded-Proto: https" "$@"; }
cookie() { sed -n "s/^[Ss]et-[Cc]ookie: $1=\([^;]*\).*/\1/p" "$headers" | tail -1; }
proxied -D "$headers" "$BASE/accounts/login/" -o /tmp/swarmscope-smoke-login.html
csrf_cookie=$(cookie csrftoken)
csrf=$(python3 -c 'import re, sys; print(re.search(r"name=.csrfmiddlewaretoken. value=.([^\"]+)", open(sys.argv[1]).read())[1])' \
  /tmp/swarmscope-smoke-login.html)
if [ -z "$csrf_cookie" ] || [ -z "$csrf" ]; then fail "the login page set no CSRF cookie or form token"; fi
status=$(proxied -D "$headers" -o /dev/null -w '%{http_code}' -H "Cookie: csrftoken=$csrf_cookie" \
  -H "Referer: https://${BASE#http://}/accounts/login/" --data-urlencode "csrfmiddlewaretoken=$csrf" \
  --data-urlencode username=smoke --data-urlencode password=smoke-password-1 "$BASE/accounts/login/")
[ "$status" = 302 ] || fail "login answered $status, not a redirect"
session=$(cookie sessionid)
[ -n "$session" ] || fail "login set no session cookie"
page=$(proxied -o /dev/null -w '%{http_code}' -H "Cookie: sessionid=$session" "$BASE/traces/$LAST_TRACE/")
[ "$page" = 200 ] || fail "the uploaded trace's page answered $page to the logged-in session"
page=$(proxied -o /dev/null -w '%{http_code}' "$BASE/traces/$LAST_TRACE/")
[ "$page" = 302 ] || fail "the uploaded trace's page answered $page without a session (expected the login redirect)"
echo "login: session opens trace $LAST_TRACE's page; without it, the login redirect"
rm -f "$headers" /tmp/swarmscope-smoke-login.html

say "websocket: /ws/traces/<id>/ with the token sends the trace's snapshot"
python3 - "$BASE" "$TOKEN" "$LAST_TRACE" <<'EOF'
import base64
import json
import os
import socket
import sys
from urllib.parse import urlsplit

base, token, trace = sys.argv[1:]
url = urlsplit(base)
sock = socket.create_connection((url.hostname, url.port), timeout=30)
key = base64.b64encode(os.urandom(16)).decode()
sock.sendall(
    f"GET /ws/traces/{trace}/?token={token} HTTP/1.1\r\nHost: {url.netloc}\r\nUpgrade: websocket\r\n"
    f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode()
)
stream = sock.makefile("rb")
status = stream.readline().decode()
assert " 101 " in status, f"handshake answered {status.strip()!r}"
while stream.readline() not in (b"\r\n", b""):
    pass
head = stream.read(2)  # the first frame of the first message: unmasked, from the server
size = head[1] & 0x7F
if size == 126:
    size = int.from_bytes(stream.read(2), "big")
elif size == 127:
    size = int.from_bytes(stream.read(8), "big")
message = json.loads(stream.read(size))
assert message.get("type") == "snapshot", f"first message is {str(message)[:200]}"
print(f"websocket: snapshot of trace {trace} at seq {message['seq']}, {len(message['events'])} events")
EOF

say "OTLP/gRPC: one span to otlp-grpc:4317 (from the web container, on the compose network)"
$COMPOSE exec -T -e SMOKE_TOKEN="$TOKEN" web python - <<'EOF'
import os

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as service
from opentelemetry.proto.common.v1 import common_pb2

request = service.ExportTraceServiceRequest()
resource = request.resource_spans.add()
resource.resource.attributes.add(key="service.name", value=common_pb2.AnyValue(string_value="smoke"))
span = resource.scope_spans.add().spans.add()
span.trace_id, span.span_id, span.name = bytes(range(1, 17)), bytes(range(1, 9)), "smoke"
span.start_time_unix_nano, span.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_001_000_000_000
export = grpc.insecure_channel("otlp-grpc:4317").unary_unary(
    "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    request_serializer=service.ExportTraceServiceRequest.SerializeToString,
    response_deserializer=service.ExportTraceServiceResponse.FromString,
)
answer = export(request, metadata=[("authorization", f"Bearer {os.environ['SMOKE_TOKEN']}")], timeout=30)
print("otlp-grpc: 1 span exported; rejected spans:", answer.partial_success.rejected_spans)
EOF

say "restart Redis (empty: no persistence), then round 2"
$COMPOSE restart redis
sleep 5
round 2
say "smoke: every step passed ($(($(date +%s) - t0)) s in all; web was on $BASE)"
