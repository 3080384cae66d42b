"""The training task. It takes a run id, re-reads the run, and is safe to run again: a resumed or
redelivered run continues from its last checkpoint (SWARMSCOPE_DATA_DIR/runs/<id>/last.pt)."""

from __future__ import annotations

import logging
import os
import sys

from celery import shared_task
from celery.signals import task_failure
from django.conf import settings

from . import services
from .models import Run

log = logging.getLogger(__name__)
_niced = False


def _be_gentle() -> None:
    """Keep the web responsive on a small machine: lower this worker process's CPU priority once
    (SWARMSCOPE_TRAINING_NICE) and cap torch's intra-op threads (SWARMSCOPE_TRAINING_THREADS)."""
    global _niced
    if not _niced and settings.SWARMSCOPE_TRAINING_NICE:
        try:
            os.nice(settings.SWARMSCOPE_TRAINING_NICE)
        except OSError:
            log.warning("could not lower the training worker's priority", exc_info=True)
        _niced = True
    torch = sys.modules.get("torch")  # loaded by the recipe; the app itself never imports torch
    if torch is not None and settings.SWARMSCOPE_TRAINING_THREADS:
        torch.set_num_threads(settings.SWARMSCOPE_TRAINING_THREADS)


@shared_task(acks_late=False)
def train_run(run_id: int, project_id: int | None = None) -> str:
    """Train run `run_id` (`services.do_train`); returns the run's final status. Acknowledged on
    receipt (acks_late off): a worker that dies mid-run must not restart hours of training by
    itself; the run is marked failed (`mark_failed`) and the user resumes it. `project_id`: the
    project the run was started in, checked again there (a run no longer in it is not trained)."""
    return services.do_train(run_id, project_id, pace=_be_gentle)


@task_failure.connect(sender=train_run)
def mark_failed(sender=None, task_id=None, exception=None, args=None, kwargs=None, **extra) -> None:
    """A training task that died without recording why — its pool process was killed (the worker
    sends WorkerLostError from the parent process) or an error escaped — marks its run failed with
    the reason; Resume continues from the last checkpoint."""
    run_id = (args or [None])[0] if args else (kwargs or {}).get("run_id")
    run = Run.objects.filter(pk=run_id).first()
    if run is not None and run.status in Run.ACTIVE:
        services.do_finish(run, status=Run.FAILED, error=f"{type(exception).__name__}: {exception}")


@shared_task
def reap_stale_runs() -> list[int]:
    """Mark failed the runs whose training task stopped reporting (Celery beat, every
    SWARMSCOPE_JOB_STALE_S seconds, on the default queue). Returns their ids."""
    return services.reap_stale_runs()


@shared_task
def requeue_lost_runs() -> list[int]:
    """Send again the queued runs whose message may be lost (Celery beat, every
    SWARMSCOPE_RUN_REQUEUE_S seconds, on the default queue): `services.requeue_lost_runs`."""
    return services.requeue_lost_runs()
