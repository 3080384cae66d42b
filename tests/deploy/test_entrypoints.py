"""docker/entrypoint-*.sh run as plain processes (what the containers run, without Docker): the web
entrypoint migrates and serves /healthz and the login page; the worker entrypoints answer the
`celery inspect ping` of their compose health checks; each refuses to start without its settings."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from tests.servers import app_env, free_port, start, stop, wait_http

from .conftest import wait_for

pytestmark = [pytest.mark.services, pytest.mark.processes, pytest.mark.timeout(300)]

DOCKER = Path(__file__).resolve().parents[2] / "docker"
COMPOSE = yaml.safe_load((DOCKER / "compose.yaml").read_text())


def entry_env(tmp_path, **extra):
    """The container's environment, as a plain process: this interpreter, production settings."""
    return app_env(
        tmp_path / "data",
        PYTHON=sys.executable,
        DJANGO_SETTINGS_MODULE="webapp.config.settings",
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="entrypoint-test-" + "x" * 40,
        ALLOWED_HOSTS="127.0.0.1,localhost",
        **extra,
    )


def get(url, **headers):
    """(status, body, Location header) of GET `url`, redirects not followed."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    try:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.build_opener(NoRedirect).open(request, timeout=10) as r:
            return r.status, r.read(), r.headers.get("Location")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers.get("Location")


def health_ping(service: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The compose health check of `service` (CMD-SHELL), run here with this machine's host name."""
    kind, command = COMPOSE["services"][service]["healthcheck"]["test"]
    assert kind == "CMD-SHELL"
    command = command.replace("$$", "$").replace("celery ", f"{sys.executable} -m celery ", 1)
    return subprocess.run(
        ["sh", "-c", command],
        env={**env, "HOSTNAME": socket.gethostname()},
        cwd=DOCKER.parent,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_web_entrypoint_migrates_serves_healthz_and_the_login_page(tmp_path, redis_server, postgres_url):
    port = free_port()
    env = entry_env(
        tmp_path,
        DATABASE_URL=postgres_url,
        REDIS_URL=redis_server.url,
        PORT=str(port),
        BIND_HOST="127.0.0.1",
        SWARMSCOPE_TRUST_PROXY_HEADERS="1",  # as docker/env.example sets it: behind the TLS proxy
    )
    log = tmp_path / "web.log"
    web = start([str(DOCKER / "entrypoint-web.sh")], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", web, log, timeout=180)
        status, body, _ = get(f"http://127.0.0.1:{port}/healthz")
        assert status == 200 and json.loads(body) == {"status": "ok", "checks": {"database": "ok", "redis": "ok"}}
        # Plain HTTP elsewhere is sent to HTTPS (DJANGO_DEBUG=0); behind the TLS proxy the login page shows.
        status, _, location = get(f"http://127.0.0.1:{port}/accounts/login/")
        assert status == 301 and location.startswith("https://")
        status, body, _ = get(f"http://127.0.0.1:{port}/accounts/login/", **{"X-Forwarded-Proto": "https"})
        assert status == 200 and b'name="password"' in body
        # Scripts on the host reach the API over plain HTTP: no redirect they cannot follow.
        assert get(f"http://127.0.0.1:{port}/api/traces/")[0] == 401
        # The image's health check asks the port the entrypoint bound ($PORT), not 8000.
        check = [sys.executable, str(DOCKER / "healthcheck_web.py")]
        assert subprocess.run(check, env={**env, "PORT": str(port)}, timeout=30).returncode == 0
        assert subprocess.run(check, env={**env, "PORT": str(free_port())}, capture_output=True, timeout=30).returncode
        redis_server.stop()
        status, body, _ = get(f"http://127.0.0.1:{port}/healthz")
        answer = json.loads(body)
        assert status == 503 and answer["status"] == "error" and answer["checks"]["database"] == "ok"
        assert answer["checks"]["redis"].startswith("error: ConnectionError")
    finally:
        stop(web)
    assert "Apply all migrations" in log.read_text() or "Applying" in log.read_text()


def test_web_entrypoint_believes_no_x_forwarded_proto_unless_told_to(tmp_path, redis_server, postgres_url):
    """Without SWARMSCOPE_TRUST_PROXY_HEADERS, Daphne runs without --proxy-headers (which would set
    the request's scheme from the client's header, whatever Django's settings say)."""
    port = free_port()
    env = entry_env(
        tmp_path,
        DATABASE_URL=postgres_url,
        REDIS_URL=redis_server.url,
        PORT=str(port),
        BIND_HOST="127.0.0.1",
        SWARMSCOPE_MIGRATE="0",  # the redirect comes before any query
    )
    log = tmp_path / "web.log"
    web = start([str(DOCKER / "entrypoint-web.sh")], env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", web, log, timeout=180)
        status, _, location = get(f"http://127.0.0.1:{port}/accounts/login/", **{"X-Forwarded-Proto": "https"})
        assert status == 301 and location.startswith("https://")
    finally:
        stop(web)


class ModelList(BaseHTTPRequestHandler):
    """GET /v1/models of an OpenAI-compatible server (what `vllm serve` answers) serving one model."""

    model = "swarm-test-model"

    def do_GET(self):
        body = json.dumps({"object": "list", "data": [{"id": self.model, "object": "model"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def model_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), ModelList)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_worker_entrypoints_answer_their_health_checks(tmp_path, redis_server, postgres_url, model_server):
    env = entry_env(
        tmp_path,
        DATABASE_URL=postgres_url,
        REDIS_URL=redis_server.url,
        SWARMSCOPE_OPENAI_BASE_URL=model_server,
        SWARMSCOPE_OPENAI_MODEL=ModelList.model,
        **{
            k: str(v)
            for k, v in COMPOSE["services"]["worker"]["environment"].items()
            if k.startswith("CELERY_") and k != "CELERY_BEAT"
        },
    )
    gpu_env = {k: v for k, v in env.items() if k not in ("CELERY_QUEUES", "CELERY_NODE_NAME")}  # its own defaults
    worker = start([str(DOCKER / "entrypoint-worker.sh"), "--concurrency", "1"], env, tmp_path / "worker.log")
    gpu = start([str(DOCKER / "entrypoint-gpu-worker.sh"), "--concurrency", "1"], gpu_env, tmp_path / "gpu.log")
    try:
        for service, process, log in (
            ("worker", worker, tmp_path / "worker.log"),
            ("gpu-worker", gpu, tmp_path / "gpu.log"),
        ):

            def pong():
                assert process.poll() is None, log.read_text()[-3000:]
                done = health_ping(service, env)
                return done if done.returncode == 0 else None

            answer = wait_for(
                pong, 120, lambda: f"{service} did not answer its health check:\n{log.read_text()[-3000:]}"
            )
            assert "pong" in answer.stdout
        worker_log, gpu_log = (tmp_path / "worker.log").read_text(), (tmp_path / "gpu.log").read_text()
        assert f"serves {ModelList.model}" in gpu_log
        assert ".> rollouts-gpu" in gpu_log and ".> default" not in gpu_log
        assert all(f".> {q}" in worker_log for q in ("default", "rollouts-cpu", "training"))
        assert ".> rollouts-gpu" not in worker_log
    finally:
        stop(worker)
        stop(gpu)


def test_entrypoints_refuse_to_start_without_their_settings(tmp_path, model_server):
    bare = {k: v for k, v in entry_env(tmp_path).items() if not k.startswith("SWARMSCOPE_OPENAI")}
    for script, needed in (
        ("entrypoint-web.sh", "DATABASE_URL and REDIS_URL"),
        ("entrypoint-worker.sh", "DATABASE_URL and REDIS_URL"),
        ("entrypoint-gpu-worker.sh", "SWARMSCOPE_OPENAI_BASE_URL and SWARMSCOPE_OPENAI_MODEL"),
    ):
        done = subprocess.run([str(DOCKER / script)], env=bare, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and needed in done.stderr, (script, done.stderr)
    # A GPU worker whose vLLM serves another model stops, naming what it serves.
    done = subprocess.run(
        [str(DOCKER / "entrypoint-gpu-worker.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **bare,
            "SWARMSCOPE_OPENAI_BASE_URL": model_server,
            "SWARMSCOPE_OPENAI_MODEL": "other",
            "VLLM_WAIT_S": "1",
        },
    )
    assert done.returncode == 1 and f"it serves ['{ModelList.model}'], not 'other'" in done.stderr
