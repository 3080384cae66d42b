"""A real Celery worker (prefork, one pool process) on a real broker trains a run of the real
recipe from the `training` queue; its pool process is killed mid-run (the run is marked failed
with the reason), Resume continues from the last checkpoint, and Cancel stops it.

Broker and database as in tests/traces/test_celery_worker.py (whose fixtures this reuses).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from celery import Celery

from tests.servers import app_env, start_worker, stop
from tests.traces.test_celery_worker import broker_url, database_url  # noqa: F401 - a fixture
from tests.training.conftest import TINY
from webapp.training import services, tasks
from webapp.training.models import Run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.processes,
    pytest.mark.timeout(300),
]


@pytest.fixture
def training_worker(broker_url, tmp_path):  # noqa: F811 - the imported fixture
    env = app_env(tmp_path / "worker-data", DATABASE_URL=database_url(), CELERY_BROKER_URL=broker_url)
    log = tmp_path / "worker.log"
    process = start_worker("training", env, log, "-P", "prefork", "-c", "1")
    yield process, log, tmp_path / "worker-data"
    stop(process)


@pytest.fixture
def producer(broker_url, monkeypatch):  # noqa: F811
    """Enqueue on the real broker (the test settings run tasks eagerly otherwise)."""
    with Celery(broker=broker_url, set_as_current=False) as client:
        monkeypatch.setattr(
            tasks.train_run,
            "apply_async",
            lambda args, queue: client.send_task(tasks.train_run.name, args=args, queue=queue),
        )
        yield client


def wait_for(run: Run, predicate, log: Path, what: str, timeout: float = 120) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if predicate(run):
            return run
        time.sleep(0.2)
    pytest.fail(
        f"the run never {what} (status {run.status}, {run.iterations_done} iterations):\n" + log.read_text()[-3000:]
    )


def pool_process(worker_pid: int) -> int:
    children = Path(f"/proc/{worker_pid}/task/{worker_pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def test_worker_trains_survives_a_killed_pool_process_resumes_and_cancels(training_worker, producer, project):
    process, log, data_dir = training_worker
    run = services.do_start_run(project, {**TINY, "budget_steps": 200_000})
    run = wait_for(run, lambda r: r.iterations_done >= 2, log, "stored two iterations")
    assert run.status == Run.RUNNING and run.started_at is not None
    checkpoint = data_dir / "runs" / str(run.pk) / "last.pt"
    assert checkpoint.exists() and run.checkpoint_path == str(checkpoint)

    os.kill(pool_process(process.pid), signal.SIGKILL)  # the OOM killer, say
    run = wait_for(run, lambda r: r.status == Run.FAILED, log, "was marked failed")
    assert "WorkerLostError" in run.error and process.poll() is None  # the worker itself lives on
    lost_at = run.iterations_done

    services.request_resume(run)
    run = wait_for(
        run,
        lambda r: r.status == Run.RUNNING and r.iterations_done >= lost_at + 2,
        log,
        "resumed and stored two more iterations",
    )
    services.do_request_cancel(run)
    run = wait_for(run, lambda r: r.status == Run.CANCELLED, log, "was cancelled")
    rows = list(run.iterations.order_by("iteration").values_list("iteration", "env_steps"))
    numbers = [n for n, _ in rows]
    # Numbering continues from the checkpoint with no gap: the recipe reports an iteration before
    # it checkpoints it, so one killed in between is re-run and reported again under its number.
    assert numbers == list(range(len(numbers)))
    assert [s for _, s in rows] == sorted(s for _, s in rows) and run.env_steps < run.budget_steps
    assert run.iterations_done == len(rows) and "train_run" in log.read_text()
