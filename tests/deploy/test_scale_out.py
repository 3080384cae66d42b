"""Scale-out: several app processes on one PostgreSQL database and one Redis, all started
by the test on free ports, meeting only through those services as they would on separate machines."""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
import websockets

from swarmscope.client import SwarmscopeClient

from .conftest import wait_for

pytestmark = [pytest.mark.services, pytest.mark.processes, pytest.mark.timeout(300)]


async def next_message(ws, kind, timeout=30):
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), timeout))
        if message["type"] == kind:
            return message


def test_a_viewer_on_one_daphne_gets_events_ingested_through_another(deployment):
    token = deployment.prepare()
    first, second = deployment.daphne("daphne-1"), deployment.daphne("daphne-2")
    trace_id = SwarmscopeClient(first, token).create_trace("two web processes", system="tests")["id"]

    async def watch(viewer_base, ingest_base, ids):
        url = f"{viewer_base.replace('http', 'ws')}/ws/traces/{trace_id}/?token={token}"
        async with websockets.connect(url) as ws:
            snapshot = await next_message(ws, "snapshot")
            events = [
                {"id": i, "t": n, "type": "message", "agent": "worker", "to": "orchestrator"} for n, i in enumerate(ids)
            ]
            answer = await asyncio.to_thread(SwarmscopeClient(ingest_base, token).send_batch, trace_id, events)
            delta = await next_message(ws, "delta")
            return snapshot["seq"], answer["seq"], delta

    with ThreadPoolExecutor(1) as pool:  # its own loop: Playwright may hold this thread's
        for viewer, ingest, ids in ((first, second, ["a1", "a2"]), (second, first, ["b1"])):
            before, written, delta = pool.submit(asyncio.run, watch(viewer, ingest, ids)).result(timeout=90)
            assert delta["seq"] == written == before + 1
            assert [e["id"] for e in delta["events"]] == ids


def test_two_workers_on_different_queues_each_take_only_their_queue(deployment, sim_trace_file):
    """A worker on `default` and one on `rollouts-cpu`; the web process enqueues the metrics of an
    uploaded trace (default) and a counterfactual job's chunks (rollouts-cpu) through Redis."""
    token = deployment.prepare()
    metrics_worker, metrics_log = deployment.worker("metrics", "default")
    rollout_worker, rollout_log = deployment.worker("rollouts", "rollouts-cpu")
    base = deployment.daphne("daphne")
    client = SwarmscopeClient(base, token)
    path, pivotal = sim_trace_file
    report = client.upload(path)
    trace_id = report["files"][0]["traces"][0]["id"]
    job = client._request(
        "POST",
        f"/api/traces/{trace_id}/counterfactuals/",
        json.dumps({"intervention": {"kind": "remove", "events": [pivotal]}, "n": 16, "seed": 5}).encode(),
    )

    def logs():
        return f"metrics worker:\n{metrics_log.read_text()[-2000:]}\nrollout worker:\n{rollout_log.read_text()[-2000:]}"

    def job_done():
        for process in (metrics_worker, rollout_worker):
            assert process.poll() is None, logs()
        state = client._request("GET", f"/api/jobs/{job['id']}/")
        assert state["status"] in ("queued", "running", "done"), state
        return state if state["status"] == "done" else None

    done = wait_for(job_done, 180, lambda: "the job did not finish:\n" + logs())
    assert done["done"] == 16 and len(done["samples"]) == 16

    def metrics_computed():
        with psycopg.connect(deployment.env["DATABASE_URL"]) as conn:
            return conn.execute(
                "SELECT computed_metrics_seq = seq FROM traces_trace WHERE id = %s", (trace_id,)
            ).fetchone()[0]

    wait_for(metrics_computed, 60, lambda: "the metrics were not computed:\n" + logs())
    metrics, rollouts = received(metrics_log), received(rollout_log)
    assert set(metrics) == {"refresh_metrics"}, logs()
    assert set(rollouts) == {"run_counterfactual_chunk"}, logs()
    assert len(rollouts) >= 2  # 16 samples in chunks of 8 (the default)


def received(log):
    """Names of the tasks a worker's log says it received, one per task."""
    return re.findall(r"Task webapp\.\w+\.tasks\.(\w+)\[[\w-]+\] received", log.read_text())
