"""A queued training run whose broker message a Redis restart dropped is picked up within 60 s of
Redis returning (issue 33), with the processes `manage.py up` runs: a Celery worker of the default
queues with beat embedded (`-B`: the `requeue-lost-runs` sweep every SWARMSCOPE_RUN_REQUEUE_S) and a
worker of the `training` queue, on the test's own Redis (no persistence: a restart comes back
empty) and PostgreSQL. SWARMSCOPE_RUN_STALE_S keeps its default (900 s): only the broker marker's
loss can have the run sent again in time. The measured seconds are in the assertion message;
bench/RESULTS.md has three of them.
"""

from __future__ import annotations

import os
import signal
import time

import psycopg
import pytest
import redis

from tests.servers import manage
from tests.training.conftest import TINY

from .conftest import wait_for

pytestmark = [pytest.mark.services, pytest.mark.processes, pytest.mark.timeout(400)]

#: Seconds Redis stays down: long enough for the workers' reconnection back-off (kombu's 2, 4, 6 ... s,
#: at most 30 s between tries) to be several tries in when it returns.
DOWN_S = 20
#: The promise: seconds from Redis answering again to the run leaving `queued`.
RESUME_WITHIN_S = 60

QUEUE_RUN = f"""
from webapp.accounts.services import do_get_or_create_project
from webapp.training import services
run = services.do_start_run(do_get_or_create_project("Redis restart"), {TINY!r})
print(run.pk)
"""


def test_a_queued_run_whose_message_a_redis_restart_dropped_resumes_within_a_minute(deployment, redis_server, tmp_path):
    env = deployment.env
    deployment.prepare()
    default, default_log = deployment.worker(
        "default", "default,rollouts-cpu", "-B", "--schedule", str(tmp_path / "celerybeat-schedule")
    )
    training, training_log = deployment.worker("training", "training")

    def logs() -> str:
        return "\n".join(f"--- {p.name}:\n{p.read_text()[-3000:]}" for p in (default_log, training_log))

    wait_for(
        lambda: all("ready." in p.read_text() for p in (default_log, training_log)),
        120,
        lambda: f"the workers did not start:\n{logs()}",
    )

    # The training worker is paused while the run is queued, so that its message waits in Redis (as
    # behind a busy worker): SIGSTOP after its blocking BRPOP (1 s) has returned to it.
    os.killpg(training.pid, signal.SIGSTOP)
    try:
        time.sleep(3)
        queued = manage("shell", "-c", QUEUE_RUN, env=env)
        assert queued.returncode == 0, queued.stderr
        run_id = int(queued.stdout.split()[-1])
        broker = redis.Redis.from_url(redis_server.url)
        assert broker.llen("training") == 1, "the run's message should be waiting in Redis"
        broker.close()
        redis_server.stop(signal.SIGKILL)  # its message is gone with it: nothing is kept on disk
    finally:
        os.killpg(training.pid, signal.SIGCONT)
    time.sleep(DOWN_S)
    redis_server.start()
    returned = time.monotonic()
    assert redis.Redis.from_url(redis_server.url).llen("training") == 0  # the message was lost

    def status() -> str:
        with psycopg.connect(env["DATABASE_URL"]) as conn:
            return conn.execute("SELECT status FROM runs_run WHERE id = %s", (run_id,)).fetchone()[0]

    wait_for(
        lambda: status() != "queued",
        RESUME_WITHIN_S,
        lambda: f"run {run_id} still {status()} {RESUME_WITHIN_S} s after Redis returned:\n{logs()}",
    )
    resumed_s = time.monotonic() - returned
    assert default.poll() is None and training.poll() is None, logs()
    print(f"\nrun {run_id} left queued {resumed_s:.1f} s after Redis returned (down {DOWN_S} s)")
    assert resumed_s < RESUME_WITHIN_S, f"resumed after {resumed_s:.1f} s"
