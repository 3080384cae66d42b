"""The workers' console (`make run`): the beat's periodic housekeeping tasks say nothing at INFO
(webapp.config.celery.QuietHousekeeping); their warnings and every other task's lines still show."""

import logging

from django.conf import settings

from webapp.config.celery import HOUSEKEEPING


def test_the_filter_knows_every_periodic_task():
    assert HOUSEKEEPING.tasks == {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "webapp.training.tasks.requeue_lost_runs" in HOUSEKEEPING.tasks


def test_housekeeping_info_lines_are_dropped_and_the_rest_kept(caplog):
    for name in ("celery.app.trace", "celery.worker.strategy", "celery.beat"):
        caplog.set_level(logging.INFO, logger=name)  # a worker's --loglevel INFO
    trace, strategy, beat = (
        logging.getLogger(n) for n in ("celery.app.trace", "celery.worker.strategy", "celery.beat")
    )
    task = "webapp.training.tasks.requeue_lost_runs"
    beat.info("Scheduler: Sending due task requeue-lost-runs (%s)", task)
    strategy.info("Task %s[%s] received", task, "a1")
    trace.info("Task %s[%s] succeeded in %ss: %s", task, "a1", 0.004, [])
    trace.info("Task %s[%s] succeeded in %ss: %s", "webapp.counterfactuals.tasks.run_chunk", "b2", 3.1, "done")
    trace.warning("Task %s[%s] retry: broker down", task, "a1")
    assert [r.getMessage() for r in caplog.records] == [
        "Task webapp.counterfactuals.tasks.run_chunk[b2] succeeded in 3.1s: done",
        "Task webapp.training.tasks.requeue_lost_runs[a1] retry: broker down",
    ]
