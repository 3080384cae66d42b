"""A real Celery worker on a real broker runs a 32-sample SwarmSim counterfactual job to completion.

Broker and database as in tests/traces/test_celery_worker.py (whose fixtures this reuses); the job's
chunks go to the `rollouts-cpu` queue, which the worker consumes.
"""

import time

import pytest
from celery import Celery

from tests.servers import app_env, start_worker, stop
from tests.traces.test_celery_worker import broker_url, database_url  # noqa: F401 - a fixture
from webapp.counterfactuals import services, tasks

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.processes,
    pytest.mark.timeout(180),
]


@pytest.fixture
def rollout_worker(broker_url, tmp_path):  # noqa: F811 - the imported fixture
    env = app_env(tmp_path / "worker-data", DATABASE_URL=database_url(), CELERY_BROKER_URL=broker_url)
    log = tmp_path / "worker.log"
    process = start_worker("rollouts-cpu", env, log)
    yield process, log
    stop(process)


def test_worker_runs_a_32_sample_job(rollout_worker, broker_url, sim_trace, pivotal, monkeypatch):  # noqa: F811
    process, log = rollout_worker
    with Celery(broker=broker_url, set_as_current=False) as client:  # a producer on the same broker, not eager
        monkeypatch.setattr(
            tasks.run_counterfactual_chunk,
            "apply_async",
            lambda args, queue: client.send_task(tasks.run_counterfactual_chunk.name, args=args, queue=queue),
        )
        job = services.request_counterfactual(sim_trace, {"kind": "remove", "events": [pivotal]}, 32)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.status == "done":
                break
            assert process.poll() is None and job.status in ("queued", "running"), log.read_text()[-3000:]
            time.sleep(0.2)
        else:
            pytest.fail("the worker did not finish the job:\n" + log.read_text()[-3000:])
    assert job.done_count == 32 and job.samples.count() == 32
    assert job.attribution.n_rollouts == 64 and job.attribution.ci_low <= job.attribution.estimate
    assert "run_counterfactual_chunk" in log.read_text()
