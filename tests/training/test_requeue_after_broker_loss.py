"""A queued run whose message a Redis restart dropped is sent again by the next sweep, not after
SWARMSCOPE_RUN_STALE_S (issue 33): the broker's marker key goes with its messages. Against the real
Redis broker (REDIS_URL; the run on PostgreSQL and Redis), the restart's data loss done as Redis's
FLUSHDB of the broker's database. The processes variant: tests/deploy/test_redis_restart.py."""

from __future__ import annotations

import os

import pytest
import redis

from tests.training.conftest import TINY
from webapp.training import services
from webapp.training.models import Run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="needs the Redis broker (REDIS_URL)"),
]


def queued_messages(client) -> int:
    return client.llen("training")


def test_a_queued_run_is_sent_again_by_the_next_sweep_once_redis_lost_its_messages(project):
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    client.delete("training")
    run = services.do_start_run(project, TINY)
    assert Run.objects.get(pk=run.pk).status == Run.QUEUED and queued_messages(client) == 1
    assert services.requeue_lost_runs() == []  # its message is there: nothing to send
    client.flushdb()  # Redis restarted without persistence: the queue and the marker are gone
    assert services.requeue_lost_runs() == [run.pk]  # the next sweep, whatever the run's age
    assert queued_messages(client) == 1
    assert services.requeue_lost_runs() == []  # sent and marked again
    client.delete("training")


def test_a_run_sent_after_the_loss_does_not_hide_the_older_runs_loss(project):
    """The marker a newer send writes into the emptied broker is that send's time: the run whose
    message went with the old data was sent before it, and the next sweep still sends it again."""
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    client.delete("training")
    lost = services.do_start_run(project, TINY)
    client.flushdb()  # its message and the marker are gone
    newer = services.do_start_run(project, TINY)  # sent into the empty broker: marks it again
    assert queued_messages(client) == 1
    assert services.requeue_lost_runs() == [lost.pk]  # not the newer run, whose message is there
    assert queued_messages(client) == 2
    assert services.requeue_lost_runs() == []
    assert set(Run.objects.filter(status=Run.QUEUED).values_list("pk", flat=True)) == {lost.pk, newer.pk}
    client.delete("training")
