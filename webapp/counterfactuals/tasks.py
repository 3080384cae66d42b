"""Celery tasks of counterfactual jobs. Tasks take ids, re-read what they need, and are safe to
run twice (samples are stored once per (job, index))."""

from celery import shared_task
from celery.signals import worker_ready

from . import costs, services


@shared_task(acks_late=True)
def run_counterfactual_chunk(job_id: int, start: int, stop: int, project_id: int | None = None) -> int:
    """Run samples start .. stop - 1 of a job; enqueued on its backend's queue (`rollouts-cpu`
    for SwarmSim, `rollouts-gpu` for LLM backends) with the id of the project it was requested
    in, which the task checks again. Returns the number of samples newly stored."""
    return services.do_run_chunk(job_id, start, stop, project_id)


@shared_task  # on CELERY_TASK_DEFAULT_QUEUE
def reap_stale_jobs() -> list[int]:
    """Re-queue the missing chunks of jobs whose heartbeat stopped (every SWARMSCOPE_JOB_STALE_S
    seconds under Celery beat, and when a worker starts). Returns the re-queued job ids."""
    return services.reap_stale_jobs()


@worker_ready.connect
def reap_on_worker_start(sender=None, **kwargs) -> None:
    """A worker that starts picks up the work of dead workers (no beat needed for that)."""
    services.reap_stale_jobs()


@shared_task
def run_cost_pilot(key: str, trace_id: int, backend: str, intervention: dict, seed: int) -> str:
    """Run a what-if job's cost pilot (`costs.do_run_pilot`; enqueued on the backend's queue by the
    estimate, webapp.counterfactuals.pilot). Returns the pilot's status."""
    return costs.do_run_pilot(key, trace_id, backend, intervention, seed)["status"]
