"""Celery tasks of stored traces. Tasks take ids, re-read what they need, and are safe to retry."""

from celery import shared_task

from .models import Trace
from .services import get_computed_metrics


@shared_task(acks_late=True)  # on CELERY_TASK_DEFAULT_QUEUE
def refresh_metrics(trace_id: int) -> dict | None:
    """Compute and cache webapp.core.metrics for a trace (after an import), so its page opens fast."""
    trace = Trace.objects.filter(pk=trace_id).first()
    if trace is None:
        return None
    return get_computed_metrics(trace)
