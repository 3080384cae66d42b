"""A job's progress reaches the viewers of its trace over `/ws/traces/<id>/`, every message in the
live protocol's schema (tests.live_socket)."""

import pytest
from channels.db import database_sync_to_async

from tests.live_socket import CheckedCommunicator
from webapp.config.celery import app
from webapp.counterfactuals import services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(60)]


@pytest.fixture
def eager_celery():
    """Run the job's chunks inline, also where REDIS_URL (CI) points Celery at a real broker: this
    test is about the websocket; real workers are tested in test_celery_worker and test_worker_fault."""
    previous = app.conf.task_always_eager
    app.conf.update(task_always_eager=True)
    yield
    app.conf.update(task_always_eager=previous)


async def test_job_messages_are_forwarded_to_the_trace_viewers(sim_trace, pivotal, api_token, eager_celery):
    ws = CheckedCommunicator("trace", f"/ws/traces/{sim_trace.pk}/?token={api_token}")
    connected, _ = await ws.connect()
    assert connected and (await ws.receive_json_from(timeout=10))["type"] == "snapshot"
    job = await database_sync_to_async(services.request_counterfactual)(
        sim_trace, {"kind": "remove", "events": [pivotal]}, 8
    )
    messages = []
    while not messages or messages[-1]["job"]["status"] != "done":
        message = await ws.receive_json_from(timeout=10)
        if message["type"] == "job":
            messages.append(message)
    assert {m["job"]["id"] for m in messages} == {job.pk}
    assert [m["job"]["done"] for m in messages] == sorted(m["job"]["done"] for m in messages)
    assert messages[-1]["job"]["result"]["n_rollouts"] == 16 and messages[-1]["job"]["branch_trace"]
    usage = messages[-1]["job"]["usage"]  # SwarmSim: no server usage, a wall time
    assert usage["requests"] is None and usage["cache_hit_rate"] is None and usage["wall_s"] >= 0
    await ws.disconnect()
