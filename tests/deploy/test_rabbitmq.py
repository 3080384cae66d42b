"""Celery on a RabbitMQ broker while Redis stays the channel layer: a counterfactual job
requested through the API runs on a worker that takes its chunks from RabbitMQ, and its progress
reaches a websocket viewer through Redis.

RabbitMQ is the machine's (amqp://guest:guest@127.0.0.1:5672), in a virtual host made for this test
and deleted after it (`rabbitmqctl`), so no queue of anyone else's is touched. PostgreSQL and Redis
are the test's own, as for every deployment test.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import socket
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
import websockets

from swarmscope.client import SwarmscopeClient

from .conftest import wait_for

pytestmark = [pytest.mark.services, pytest.mark.processes, pytest.mark.timeout(300)]

AMQP_HOST, AMQP_PORT = "127.0.0.1", 5672


@pytest.fixture
def rabbitmq_vhost():
    """The name of a fresh RabbitMQ virtual host that `guest` may use; skips without RabbitMQ."""
    try:
        socket.create_connection((AMQP_HOST, AMQP_PORT), timeout=2).close()
    except OSError as exc:
        pytest.skip(f"no RabbitMQ on {AMQP_HOST}:{AMQP_PORT} ({exc})")
    if shutil.which("rabbitmqctl") is None:
        pytest.skip("rabbitmqctl not found: cannot make a virtual host of this test's own")
    vhost = f"swarmscope-test-{secrets.token_hex(4)}"

    def ctl(*args):
        done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"rabbitmqctl {' '.join(args)}: {done.stderr}"

    ctl("add_vhost", vhost)
    ctl("set_permissions", "-p", vhost, "guest", ".*", ".*", ".*")
    yield vhost
    ctl("delete_vhost", vhost)


def test_a_job_runs_through_rabbitmq_and_its_progress_through_redis(deployment, rabbitmq_vhost, sim_trace_file):
    deployment.env["CELERY_BROKER_URL"] = f"amqp://guest:guest@{AMQP_HOST}:{AMQP_PORT}/{rabbitmq_vhost}"
    token = deployment.prepare()
    worker, log = deployment.worker("amqp-worker", "default,rollouts-cpu")
    base = deployment.daphne("daphne")
    client = SwarmscopeClient(base, token)
    path, pivotal = sim_trace_file
    trace_id = client.upload(path)["files"][0]["traces"][0]["id"]
    wait_for(lambda: "ready" in log.read_text() or worker.poll() is not None, 60, lambda: log.read_text()[-3000:])
    assert worker.poll() is None, log.read_text()[-3000:]
    assert f"amqp://guest:**@{AMQP_HOST}:{AMQP_PORT}/{rabbitmq_vhost}" in log.read_text()

    async def watch():
        url = f"{base.replace('http', 'ws')}/ws/traces/{trace_id}/?token={token}"
        async with websockets.connect(url) as ws:
            assert json.loads(await asyncio.wait_for(ws.recv(), 30))["type"] == "snapshot"
            job = await asyncio.to_thread(
                client._request,
                "POST",
                f"/api/traces/{trace_id}/counterfactuals/",
                json.dumps({"intervention": {"kind": "remove", "events": [pivotal]}, "n": 16, "seed": 7}).encode(),
            )
            progress = []
            while not progress or progress[-1]["status"] != "done":
                message = json.loads(await asyncio.wait_for(ws.recv(), 120))
                if message["type"] == "job" and message["job"]["id"] == job["id"]:
                    assert message["job"]["status"] in ("queued", "running", "done"), message
                    progress.append(message["job"])
            return job, progress

    with ThreadPoolExecutor(1) as pool:  # its own loop: Playwright may hold this thread's
        job, progress = pool.submit(asyncio.run, watch()).result(timeout=200)

    assert [p["done"] for p in progress] == sorted(p["done"] for p in progress)
    assert progress[-1]["done"] == 16 and progress[-1]["result"] is not None
    stored = client._request("GET", f"/api/jobs/{job['id']}/")
    assert stored["status"] == "done" and [s["index"] for s in stored["samples"]] == list(range(16))
    assert "run_counterfactual_chunk" in log.read_text() and "succeeded" in log.read_text()
