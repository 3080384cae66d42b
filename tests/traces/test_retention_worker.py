"""The retention task on a real Celery worker and a real broker (fixtures of tests/traces)."""

import time
from datetime import timedelta

import pytest
from celery import Celery
from django.utils import timezone

from tests.review.conftest import ingest
from tests.traces.test_celery_worker import broker_url, worker  # noqa: F401  (fixtures)
from webapp.accounts.datacare import do_set_retention
from webapp.traces.models import Event, Trace
from webapp.traces.tasks import delete_expired_traces

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.services,
    pytest.mark.processes,
    pytest.mark.timeout(180),
]


def test_worker_deletes_expired_traces_of_the_project(worker, broker_url, project, fixtures):  # noqa: F811
    process, log = worker
    old = ingest(project, fixtures / "native_small.json", source_id="old")
    new = ingest(project, fixtures / "native_small.json", source_id="new")
    Trace.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=8))
    do_set_retention(project, 7)
    # A producer on the same broker, not eager; not the current app (shared tasks of later tests would
    # otherwise send to this test's broker, gone after it).
    with Celery(broker=broker_url, set_as_current=False) as client:
        client.send_task(delete_expired_traces.name, queue="default")
    deadline = time.monotonic() + 120
    while Trace.objects.filter(pk=old.pk).exists():
        assert process.poll() is None, log.read_text()
        if time.monotonic() > deadline:
            pytest.fail("the worker did not run the task:\n" + log.read_text()[-3000:])
        time.sleep(0.2)
    assert list(Trace.objects.values_list("pk", flat=True)) == [new.pk]
    assert not Event.objects.filter(trace_id=old.pk).exists()
    assert "delete_expired_traces" in log.read_text()
