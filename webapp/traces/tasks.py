"""Celery tasks of stored traces. Tasks take ids, re-read what they need, and are safe to retry."""

from celery import shared_task

from swarmscope.importers import otlp
from webapp.accounts.models import Project

from .datacare import do_delete_expired_traces
from .idempotency import do_delete_expired_keys
from .models import Trace
from .services import do_publish_metrics, get_computed_metrics
from .span_ingest import do_derive_spans


@shared_task(acks_late=True)  # on CELERY_TASK_DEFAULT_QUEUE
def refresh_metrics(trace_id: int) -> dict | None:
    """Compute and cache swarmscope.metrics for a trace (after an import), so its page opens fast."""
    trace = Trace.objects.filter(pk=trace_id).first()
    if trace is None:
        return None
    return get_computed_metrics(trace)


@shared_task(acks_late=True)  # on CELERY_TASK_DEFAULT_QUEUE
def publish_metrics(trace_id: int) -> int | None:
    """Recompute a streaming trace's metrics and push them to its viewers (`{"type": "metrics"}` on
    `/ws/traces/<id>/`; services.request_live_metrics asks for it after live writes); the seq they
    are of, None when the trace is gone."""
    message = do_publish_metrics(trace_id)
    return message["seq"] if message is not None else None


@shared_task(acks_late=True)  # on CELERY_TASK_DEFAULT_QUEUE
def derive_spans(trace_id: int, source: str = "OTLP/HTTP") -> int | None:
    """Re-derive an OTLP trace left `spans_pending` by requests (webapp.traces.span_ingest); the seq
    written, None when another run of this task already did it."""
    result = do_derive_spans(trace_id, otlp, source)
    return result.seq if result is not None else None


@shared_task
def derive_pending_spans() -> int:
    """Re-derive every trace still `spans_pending` (its task was lost); how many were."""
    pending = list(Trace.objects.filter(spans_pending=True).values_list("pk", flat=True))
    for pk in pending:
        derive_spans(pk)
    return len(pending)


@shared_task
def delete_expired_traces(project_id: int | None = None) -> dict[int, int]:
    """Delete traces older than their project's retention period (Celery beat runs this hourly,
    see CELERY_BEAT_SCHEDULE). With `project_id`, only that project. Returns {project id: deleted}.
    The hourly run (no `project_id`) also deletes expired `Idempotency-Key`s (webapp.traces.idempotency)."""
    if project_id is None:
        do_delete_expired_keys()
    ids = (
        [project_id]
        if project_id is not None
        else list(Project.objects.filter(retention_days__isnull=False).values_list("pk", flat=True))
    )
    return {pk: do_delete_expired_traces(pk) for pk in ids}
