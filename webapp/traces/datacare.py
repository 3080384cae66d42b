"""Deleting traces with what depends on them, and the retention purge.

What a deletion takes along is listed beforehand with `webapp.accounts.datacare.list_dependants`.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from webapp.accounts.models import Project
from webapp.web.broadcast import broadcast_trace_reset

from . import ingest
from .models import Trace

log = logging.getLogger(__name__)


@transaction.atomic
def do_delete_trace(trace) -> int:
    """Delete a trace with its events, edges, agents, labels, jobs, attributions and review;
    returns the number of rows deleted."""
    deleted, _ = trace.delete()
    return deleted


#: A trace's own rows, as its reverse relations: what `do_reset_trace` empties.
CONTENTS = ("events", "edges", "agents", "labels", "spans", "log_records")
#: The trace row's fields that its contents give it, with the values of a trace created empty.
CONTENT_FIELDS = {
    "attributes": dict,
    "rewards": dict,
    "costs": dict,
    "metrics": dict,
    "computed_metrics": dict,
    "computed_metrics_seq": lambda: -1,
    "event_count": lambda: 0,
    "agent_count": lambda: 0,
    "total_tokens": lambda: None,
    "estimated_tokens": lambda: 0,
    "duration_s": lambda: 0.0,
    "reward": lambda: None,
    "label_summary": str,
    "last_event_at": lambda: None,
    "spans_pending": lambda: False,
    "staged_at": lambda: None,
}


@transaction.atomic
def do_reset_trace(trace: Trace) -> Trace:
    """Empty `trace` in place: delete its events, edges, agents, labels, spans and log records, and
    give the row the counts, totals and computed metrics of a trace created empty, keeping its id,
    identity and name (so its links stay valid). The write has the next seq and is a rebuild
    (`reset_seq`, as webapp.traces.span_ingest's): after commit its viewers are sent a fresh
    snapshot (`broadcast_trace_reset`) and its trace-list row is re-sent. Counterfactual jobs,
    attributions and review are not touched (a caller resets only traces without them). Returns
    the saved row."""
    row = Trace.objects.select_for_update().get(pk=trace.pk)
    for name in CONTENTS:
        getattr(row, name).all().delete()
    for name, empty in CONTENT_FIELDS.items():
        setattr(row, name, empty())
    row.seq += 1
    row.reset_seq = row.seq
    row.save()
    seq = row.seq
    transaction.on_commit(lambda: broadcast_trace_reset(row.pk, seq))
    transaction.on_commit(lambda: ingest.notify_trace_list(row))
    return row


def do_delete_expired_traces(project_id: int, *, now=None) -> int:
    """Delete the project's traces created more than its retention period ago; returns how many.

    Re-reads the project (a task takes ids): a project deleted or without retention deletes nothing.
    Deletes trace by trace, each in its own transaction, so a long purge never holds one big lock.
    """
    project = Project.objects.filter(pk=project_id).first()
    if project is None or not project.retention_days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=project.retention_days)
    count = 0
    for trace in Trace.objects.filter(project_id=project.pk, created_at__lt=cutoff).order_by("id").iterator():
        do_delete_trace(trace)
        count += 1
    if count:
        log.info(
            "retention: deleted %d traces of project %s older than %d days", count, project.pk, project.retention_days
        )
    return count
