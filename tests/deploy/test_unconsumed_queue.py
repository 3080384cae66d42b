"""A job for a queue that no worker consumes (issue 18 item 12: the `openai` backend offered on a
CPU-only deployment) fails with that reason at the reaper's next sweep instead of staying queued
while the reaper re-sends it forever; once a worker on that queue runs, Retry finishes it.

Real processes on the test's own Redis and PostgreSQL (tests/deploy/conftest.py): a worker on
`default` only, with Celery beat (the reaper); the SwarmSim backend's queue, `rollouts-cpu`, has no
worker until the test starts one.
"""

from __future__ import annotations

import json

import pytest

from swarmscope.client import SwarmscopeClient

from .conftest import wait_for

pytestmark = [pytest.mark.services, pytest.mark.processes, pytest.mark.timeout(300)]


def test_a_job_no_worker_can_take_fails_naming_the_queue_and_retry_runs_it(deployment, sim_trace_file, tmp_path):
    deployment.env.update(SWARMSCOPE_JOB_STALE_S="3")
    token = deployment.prepare()
    _, log = deployment.worker("default", "default", "-B", "--schedule", str(tmp_path / "celerybeat-schedule"))
    client = SwarmscopeClient(deployment.daphne("daphne"), token)
    path, pivotal = sim_trace_file
    trace_id = client.upload(path)["files"][0]["traces"][0]["id"]
    body = {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 8, "seed": 1, "backend": "sim"}
    job = client._request("POST", f"/api/traces/{trace_id}/counterfactuals/", json.dumps(body).encode())
    assert job["status"] == "queued"

    def state():
        return client._request("GET", f"/api/jobs/{job['id']}/")

    failed = wait_for(
        lambda: (s := state())["status"] == "failed" and s, 120, lambda: f"{state()}\n{log.read_text()[-3000:]}"
    )
    assert failed["error"].startswith("no worker consumes the rollouts-cpu queue of the sim backend"), failed

    _, rollout_log = deployment.worker("rollouts", "rollouts-cpu")
    wait_for(lambda: " ready." in rollout_log.read_text(), 120, lambda: rollout_log.read_text()[-3000:])
    client._request("POST", f"/api/jobs/{job['id']}/retry/", b"{}")
    done = wait_for(
        lambda: (s := state())["status"] == "done" and s, 180, lambda: f"{state()}\n{rollout_log.read_text()[-3000:]}"
    )
    assert done["done"] == 8 and done["error"] == ""
