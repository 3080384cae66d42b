"""Writes during a broker outage (issue 18 item 6): the write is committed before its after-commit
enqueue runs, so a broker that cannot be reached must not turn it into a 500 (a client retrying
the 500 would create a second job). Each write answers 2xx once; the work stays in the database
and the sweeps send it when the broker is back (`reap_stale_jobs`, `requeue_lost_runs`), and it runs.

Fault injection throughout: every Celery publish (`Task.apply_async`) raises kombu's
OperationalError, as it does when Redis is down; "the broker is back" removes the patch and runs
tasks inline (`task_always_eager`), as a worker would.
"""

from __future__ import annotations

import json

import pytest
from celery import current_app
from celery.app.task import Task
from kombu.exceptions import OperationalError

from tests.counterfactuals import conftest as job_fixtures
from tests.training import conftest as run_fixtures
from webapp.counterfactuals import services as jobs
from webapp.counterfactuals.models import CounterfactualJob
from webapp.traces.models import Trace
from webapp.training import services as runs
from webapp.training.models import Run, RunIteration
from webapp.web import jobs as web_jobs
from webapp.web.jobs import enqueue

pytestmark = [pytest.mark.django_db, pytest.mark.services, pytest.mark.timeout(300)]
TINY = run_fixtures.TINY
case, pivotal, sim_trace = job_fixtures.case, job_fixtures.pivotal, job_fixtures.sim_trace
iterations, recorded_iterations = run_fixtures.iterations, run_fixtures.recorded_iterations


class Broker:
    """Fault injection: `down()` makes every publish raise OperationalError and counts the
    attempts; `up()` removes that and runs tasks inline."""

    def __init__(self, monkeypatch):
        self.monkeypatch, self.refused = monkeypatch, []

    def down(self):
        def refuse(task, args=None, kwargs=None, **options):
            self.refused.append(task.name)
            raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

        self.monkeypatch.setattr(Task, "apply_async", refuse)

    def up(self):
        self.monkeypatch.undo()
        self.monkeypatch.setitem(current_app.conf, "task_always_eager", True)


@pytest.fixture
def broker(monkeypatch):
    broker = Broker(monkeypatch)
    broker.down()
    yield broker
    monkeypatch.undo()


def test_enqueue_logs_and_answers_false_when_the_broker_is_down(broker, monkeypatch):
    logged = []
    monkeypatch.setattr(web_jobs.log, "error", lambda message, *args, **kwargs: logged.append(message % args))
    assert enqueue("webapp.traces.tasks.refresh_metrics", 1) is False
    assert broker.refused == ["webapp.traces.tasks.refresh_metrics"]
    assert logged and logged[0].startswith("could not enqueue webapp.traces.tasks.refresh_metrics")
    with pytest.raises(KeyError):
        enqueue("webapp.no.such.task")


def test_an_upload_during_an_outage_answers_200_once(api_client, fixtures, broker, django_capture_on_commit_callbacks):
    data = (fixtures / "native_small.json").read_bytes()
    with django_capture_on_commit_callbacks(execute=True) as hooks:
        answer = api_client.post("/api/traces/upload/?filename=native.json", data, content_type="application/json")
    assert answer.status_code == 200, answer.content[:300]
    assert hooks and "webapp.traces.tasks.refresh_metrics" in broker.refused
    assert Trace.objects.count() == 1
    broker.up()
    from webapp.traces.services import get_computed_metrics

    assert get_computed_metrics(Trace.objects.get())["critical_steps"] > 0  # computed on read instead


def test_a_counterfactual_request_during_an_outage_answers_202_once_and_runs_later(
    api_client, sim_trace, pivotal, broker, django_capture_on_commit_callbacks
):
    body = {"intervention": {"kind": "remove", "events": [pivotal]}, "n": 4, "seed": 0}
    with django_capture_on_commit_callbacks(execute=True):
        answer = api_client.post(
            f"/api/traces/{sim_trace.pk}/counterfactuals/", json.dumps(body), content_type="application/json"
        )
    assert answer.status_code == 202, answer.content[:300]
    assert "webapp.counterfactuals.tasks.run_counterfactual_chunk" in broker.refused
    job = CounterfactualJob.objects.get()
    assert job.status == CounterfactualJob.QUEUED
    broker.up()
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs.reap_stale_jobs(max_age_s=0) == [job.pk]
    job.refresh_from_db()
    assert job.status == CounterfactualJob.DONE and job.samples.count() == 4
    assert CounterfactualJob.objects.count() == 1


def test_iteration_reports_during_an_outage_answer_201(
    api_client, iterations, broker, django_capture_on_commit_callbacks
):
    created = api_client.post("/api/runs/", json.dumps({"config": TINY}), content_type="application/json")
    assert created.status_code == 201, created.content[:300]
    run_id = created.json()["id"]
    for doc in iterations:
        with django_capture_on_commit_callbacks(execute=True):
            answer = api_client.post(
                f"/api/runs/{run_id}/iterations/", json.dumps(doc), content_type="application/json"
            )
        assert answer.status_code == 201, answer.content[:300]
    assert RunIteration.objects.filter(run_id=run_id).count() == len(iterations)
    assert "webapp.traces.tasks.refresh_metrics" in broker.refused  # the episodes' metrics, asked for and refused


def test_a_run_started_during_an_outage_is_sent_again_and_trains(project, broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        run = runs.do_start_run(project, dict(TINY))
    assert broker.refused == ["webapp.training.tasks.train_run"]
    run.refresh_from_db()
    assert run.status == Run.QUEUED and run.heartbeat_at is None  # marked: its message was never sent
    broker.up()
    with django_capture_on_commit_callbacks(execute=True):
        assert runs.requeue_lost_runs() == [run.pk]
    run.refresh_from_db()
    assert run.status == Run.FINISHED and run.iterations_done >= 2
    assert runs.requeue_lost_runs() == []


def test_a_queued_run_whose_message_was_lost_is_sent_again(project, settings, monkeypatch):
    """A broker restart drops a queued run's message: where the loss cannot be seen (RabbitMQ, or a
    Redis whose marker still stands), a run still queued RUN_STALE_S after it was sent is sent again;
    a duplicate delivery is claimed once. (A Redis that lost its marker: test_requeue_after_broker_loss.)"""
    from datetime import timedelta

    from django.utils import timezone

    sent = []
    monkeypatch.setattr("webapp.training.services.enqueue", lambda name, *args, **kw: sent.append(args) or True)
    # the sends are not made, so nothing marks a Redis broker: its missing marker must not count as a loss here
    monkeypatch.setattr("webapp.training.services.broker_lost_before", lambda: None)
    settings.SWARMSCOPE_RUN_STALE_S = 60
    run = runs.do_start_run(project, dict(TINY))  # no on_commit here: the test transaction never commits
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=30))
    assert runs.requeue_lost_runs() == []  # sent recently: waiting for a worker
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=120))
    assert runs.requeue_lost_runs() == [run.pk]
    Run.objects.filter(pk=run.pk).update(status=Run.RUNNING)
    assert runs.do_train(run.pk) == Run.RUNNING  # a second delivery finds it claimed, and leaves it
