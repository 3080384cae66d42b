"""Celery tasks of stored traces. Tasks take ids, re-read what they need, and are safe to retry."""

from celery import shared_task

from webapp.core.importers import otlp

from .models import Trace
from .services import do_derive_spans, get_computed_metrics


@shared_task(acks_late=True)  # on CELERY_TASK_DEFAULT_QUEUE
def refresh_metrics(trace_id: int) -> dict | None:
    """Compute and cache webapp.core.metrics for a trace (after an import), so its page opens fast."""
    trace = Trace.objects.filter(pk=trace_id).first()
    if trace is None:
        return None
    return get_computed_metrics(trace)


@shared_task(acks_late=True)  # on CELERY_TASK_DEFAULT_QUEUE
def derive_spans(trace_id: int, source: str = "OTLP/HTTP") -> int | None:
    """Re-derive an OTLP trace left `spans_pending` by requests (webapp.traces.services); the seq
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
