"""Celery tasks of stored traces. Tasks take ids, re-read what they need, and are safe to retry."""

import time

from celery import shared_task
from django.conf import settings
from django.core.cache import cache

from swarmscope.importers import otlp
from webapp.accounts.models import Project
from webapp.web.jobs import enqueue

from .datacare import do_delete_expired_traces
from .idempotency import do_delete_expired_keys
from .models import Trace
from .services import do_publish_metrics, get_computed_metrics
from .span_ingest import do_derive_spans, spans_stored_key


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


#: How long the derive_spans marker of a trace lives unless renewed: a worker that died holding it
#: delays the trace's derivation this long at most (the periodic sweep then asks again).
DERIVE_LOCK_S = 300
#: A stream counts as paused once no request has stored spans of the trace for this long; a
#: scheduled derivation checks every DERIVE_POLL_S whether to start before its time.
DERIVE_QUIET_S = 0.5
DERIVE_POLL_S = 0.5


@shared_task(acks_late=True)  # on CELERY_TASK_DEFAULT_QUEUE
def derive_spans(trace_id: int, source: str = "OTLP/HTTP", due: float | None = None) -> int | None:
    """Re-derive an OTLP trace left `spans_pending` by requests (webapp.traces.span_ingest); the seq
    written, None when this run did not derive.

    One derivation per trace at a time, and a stream's bursts coalesced: a request's run (`due`
    None) derives only if it takes the trace's cache marker (else one is running or scheduled, and
    will see the request's spans). When requests left the trace pending again meanwhile, the run
    schedules the next one (keeping the marker) SWARMSCOPE_OTLP_DERIVE_SPACING times its CPU time
    later (at most SWARMSCOPE_OTLP_DERIVE_WAIT_MAX_S; `due`, a time.time()), so the worker takes
    at most 1 / (1 + spacing) of a CPU for a stream; the scheduled run starts earlier once spans
    stop coming for DERIVE_QUIET_S. Other tasks run meanwhile (no run sleeps). Eager tasks (no
    worker) derive at once."""
    key = f"swarmscope:derive-spans:{trace_id}"
    if due is None and not cache.add(key, 1, timeout=DERIVE_LOCK_S):
        return None
    eager = derive_spans.request.is_eager  # run by apply(), or by CELERY_TASK_ALWAYS_EAGER
    if due is not None and not eager and time.time() < due and _spans_coming(trace_id):
        return _schedule(trace_id, source, due, key, None)
    started = time.process_time()
    result = do_derive_spans(trace_id, otlp, source)
    seq = result.seq if result is not None else None
    if result is not None and not eager and _derivable(trace_id):
        wait = settings.SWARMSCOPE_OTLP_DERIVE_SPACING * (time.process_time() - started)
        return _schedule(
            trace_id, source, time.time() + min(wait, settings.SWARMSCOPE_OTLP_DERIVE_WAIT_MAX_S), key, seq
        )
    cache.delete(key)
    if _derivable(trace_id):  # a request's run found the marker just before it went
        enqueue("webapp.traces.tasks.derive_spans", trace_id, source)
    return seq


def _schedule(trace_id: int, source: str, due: float, key: str, seq: int | None) -> int | None:
    """Run derive_spans for `due` (checked every DERIVE_POLL_S), keeping the marker `key`; when the
    broker refuses, the marker goes and the periodic sweep asks again. Returns `seq`."""
    cache.touch(key, DERIVE_LOCK_S)
    countdown = max(0.0, min(DERIVE_POLL_S, due - time.time()))
    if not enqueue("webapp.traces.tasks.derive_spans", trace_id, source, due, countdown=countdown or None):
        cache.delete(key)
    return seq


def _spans_coming(trace_id: int) -> bool:
    """Whether a request stored spans of the trace in the last DERIVE_QUIET_S (when the last one did:
    span_ingest.spans_stored_key, set after each request's commit)."""
    last = cache.get(spans_stored_key(trace_id))
    return last is not None and time.time() - last < DERIVE_QUIET_S


def _derivable(trace_id: int) -> bool:
    """Whether requests left the trace pending and no large API batch is being staged into it."""
    return Trace.objects.filter(pk=trace_id, spans_pending=True, staged_at__isnull=True).exists()


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
