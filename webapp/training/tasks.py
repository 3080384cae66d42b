"""The training task. It takes a run id, re-reads the run, and is safe to run again: a resumed or
redelivered run continues from its last checkpoint (SWARMSCOPE_DATA_DIR/runs/<id>/last.pt)."""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback

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
    """Train run `run_id` with the recipe's `train(config, checkpoint_dir=..., resume=...,
    on_iteration=..., should_stop=...)`: each iteration is stored and broadcast, cancel is polled
    between iterations. Returns the run's final status. Acknowledged on receipt (acks_late off):
    a worker that dies mid-run must not restart hours of training by itself; the run is marked
    failed and the user resumes it. `project_id`: the project the run was started in, checked
    again here (a run no longer in it is not trained)."""
    runs = Run.objects.filter(pk=run_id)
    if project_id is not None:
        runs = runs.filter(project_id=project_id)
    run = runs.first()
    if run is None or run.external:
        return "missing"
    if run.status == Run.CANCELLING:
        services.do_finish(run, status=Run.CANCELLED)
        return Run.CANCELLED
    if run.status != Run.QUEUED:
        return run.status  # a duplicate delivery: the run already ran or is running elsewhere
    recipe = services.recipe()
    directory = services.checkpoint_dir(run)
    directory.mkdir(parents=True, exist_ok=True)
    checkpoint = directory / "last.pt"
    # Resume only from this run's own checkpoint: a file left there by something else (a database
    # that was reset while SWARMSCOPE_DATA_DIR was kept) is not this run's and is set aside.
    resume = bool(run.checkpoint_path) and checkpoint.exists()
    if checkpoint.exists() and not resume:
        checkpoint.replace(directory / "stale-last.pt")
    services.do_mark_running(run)
    _be_gentle()

    def on_iteration(doc: dict) -> None:
        _be_gentle()
        # an iteration the app cannot store (a reward that overflowed to inf) fails the run, with
        # the field named, rather than training on unseen
        services.do_record_iteration(run, doc)
        services.do_set_checkpoint(run, str(checkpoint))

    try:
        summary = recipe.train(recipe.RunConfig.from_dict(run.config), checkpoint_dir=directory, resume=resume,
                               on_iteration=on_iteration, should_stop=lambda: services.is_cancel_requested(run_id))
    except Exception as exc:  # noqa: BLE001 - the run records why; the worker lives on
        log.exception("run %s failed", run_id)
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        services.do_finish(run, status=Run.FAILED, error=last)
        return Run.FAILED
    run.refresh_from_db()
    cancelled = run.status in (Run.CANCELLING, Run.CANCELLED) or (isinstance(summary, dict)
                                                                   and summary.get("status") == "cancelled")
    status = Run.CANCELLED if cancelled else Run.FINISHED
    summary = json.loads(json.dumps(summary, default=str)) if isinstance(summary, dict) else {}
    try:
        services.do_finish(run, status=status, summary=summary)
    except services.RunInputError as exc:
        services.do_finish(run, status=Run.FAILED, error=f"the recipe's summary: {exc}")
        return Run.FAILED
    return status


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
