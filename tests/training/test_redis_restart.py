"""Training runs when the broker is down or has lost its messages (issue 18 item 5), with the task
body called directly: a running run whose enqueues fail keeps training; a queued run whose
message was never sent, or was lost, is sent again by the sweep (`requeue_lost_runs`) and by
Resume. The same with real processes and a real Redis restart: tests/deploy/test_redis_restart.py.
"""

from __future__ import annotations

import pytest
from celery.app.task import Task
from kombu.exceptions import OperationalError

from tests.training.conftest import TINY
from webapp.training import services
from webapp.training.models import Run

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


@pytest.fixture
def sent(monkeypatch):
    """Every task sent, as (name, args, queue), none run; `sent.down = True` makes sends fail as
    they do with Redis down (kombu's OperationalError, "Error 111 connecting ...")."""

    class Sent(list):
        down = False
        refused = 0  # sends that failed

    record = Sent()

    def apply_async(task, args=None, kwargs=None, **options):
        if record.down:
            record.refused += 1
            raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
        record.append((task.name, tuple(args or ()), options.get("queue")))

    monkeypatch.setattr(Task, "apply_async", apply_async)
    return record


def training_sends(sent) -> list[tuple]:
    return [s for s in sent if s[0] == "webapp.training.tasks.train_run"]


def test_a_run_keeps_training_while_every_enqueue_fails(project, settings, tmp_path, sent):
    """Each iteration imports sample episodes, whose metrics are enqueued after commit; with the
    broker down those sends fail. The run must finish with every iteration stored."""
    settings.DATA_DIR = tmp_path
    run = services.do_create_run(project, {**TINY, "budget_steps": 1200})
    sent.down = True
    assert services.do_train(run.pk, project.pk) == Run.FINISHED
    run.refresh_from_db()
    assert run.status == Run.FINISHED and run.error == ""
    numbers = list(run.iterations.order_by("iteration").values_list("iteration", flat=True))
    assert len(numbers) >= 2 and numbers == list(range(len(numbers))) and run.iterations_done == len(numbers)
    assert run.iterations.filter(episodes__isnull=False).exists()  # the episodes were imported too
    assert sent == [] and sent.refused >= len(numbers)  # every iteration's sends failed


def test_a_queued_run_whose_send_failed_is_sent_again_by_the_sweep(project, sent):
    sent.down = True
    run = services.do_start_run(project, TINY)  # the write succeeds; the send after commit fails
    run.refresh_from_db()
    assert run.status == Run.QUEUED and run.heartbeat_at is None
    sent.down = False
    assert services.requeue_lost_runs() == [run.pk]
    assert training_sends(sent) == [("webapp.training.tasks.train_run", (run.pk, project.pk), "training")]
    assert services.requeue_lost_runs() == []  # sent a moment ago: not again before it is stale


def test_a_queued_run_whose_message_was_lost_is_sent_again_once_stale(project, sent):
    run = services.do_start_run(project, TINY)
    assert len(training_sends(sent)) == 1  # sent; then Redis restarted empty and the message is gone
    assert services.requeue_lost_runs() == []  # not stale yet
    assert services.requeue_lost_runs(max_age_s=0) == [run.pk]
    assert len(training_sends(sent)) == 2
    services.do_request_cancel(run)
    assert services.requeue_lost_runs(max_age_s=0) == []  # only queued runs


def test_resume_sends_a_queued_run_again_and_still_refuses_a_running_one(project, sent):
    run = services.do_start_run(project, TINY)
    resumed = services.request_resume(run)
    assert resumed.status == Run.QUEUED and len(training_sends(sent)) == 2
    # a duplicate delivery is harmless: the first claims the run, the second finds it taken
    services.do_mark_running(run)
    assert services.do_train(run.pk, project.pk) == Run.RUNNING
    with pytest.raises(services.RunInputError) as refused:
        services.request_resume(run)
    assert refused.value.field == "status" and "running run cannot be resumed" in str(refused.value)


def test_the_resume_endpoint_answers_200_for_a_queued_run(project, sent, api_token, client):
    run = services.do_start_run(project, TINY)
    answer = client.post(f"/api/runs/{run.pk}/resume/", HTTP_AUTHORIZATION=f"Bearer {api_token}")
    assert answer.status_code == 200 and answer.json()["status"] == "queued"
    assert len(training_sends(sent)) == 2
