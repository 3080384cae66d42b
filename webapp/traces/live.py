"""The end of a live stream: `POST /api/traces/<id>/close/` (the Python client's
`TraceStream.close()`, the sample SwarmSim stream) clears a trace's live state at once, instead of
the SWARMSCOPE_LIVE_IDLE_S idle timeout, which stays the fallback for a sender that never says.

A trace is live while its `last_event_at` (set by every live batch, webapp.traces.ingest) is under
SWARMSCOPE_LIVE_IDLE_S old (webapp.traces.services.is_live). Closing clears it and writes one
numbered delta without rows, carrying the trace summary with `live: false`, so the trace page's
badge and the trace list's (their row is re-sent) clear as any other change reaches them. A batch
after the close makes the trace live again.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from webapp.web.broadcast import broadcast_trace_delta

from . import ingest
from .models import Trace
from .services import write_delta


@dataclass(frozen=True)
class CloseResult:
    """The trace row after a close, and whether this call ended its stream (False: there was none
    to end, the trace was closed before or never streamed)."""

    trace: Trace
    closed: bool


def do_close_stream(trace_id: int) -> CloseResult | None:
    """Clear the live state of trace `trace_id`: `last_event_at` to null under the trace's next seq,
    whose delta (no rows, the summary with `live: false`) and trace-list row are broadcast after
    commit. Idempotent: a trace without `last_event_at` is returned unchanged (`closed` False, no
    new seq). None for a trace that is gone. The cached computed metrics stay valid (no row
    changed): their seq moves along. Raises webapp.traces.ingest.TraceBusy (HTTP 503, send again)
    while a large batch is being staged into the trace (its rows wait under seq + 1); a staging
    whose writer died is discarded first, as the next batch would (webapp.traces.ingest)."""
    for _attempt in range(3):
        with transaction.atomic():
            row = Trace.objects.select_for_update().filter(pk=trace_id).first()
            if row is None:
                return None
            if row.last_event_at is None:
                return CloseResult(row, closed=False)
            if row.staged_at is None:
                return _close(row)
            abandoned = ingest.abandoned_staging(row)  # raises TraceBusy while its writer may be alive
        ingest.discard_staged(abandoned)
    raise ingest.TraceBusy(trace_id, 1)


def _close(row: Trace) -> CloseResult:
    """Write the close of the locked `row` (inside the caller's transaction)."""
    seq = row.seq + 1
    fields = ["seq", "last_event_at", "updated_at"]
    if row.computed_metrics_seq == row.seq:
        row.computed_metrics_seq = seq
        fields.append("computed_metrics_seq")
    row.seq, row.last_event_at = seq, None
    row.save(update_fields=fields)
    delta = write_delta(row, seq, [], [], [], [])
    transaction.on_commit(lambda: broadcast_trace_delta(row.pk, delta))
    transaction.on_commit(lambda: ingest.notify_trace_list(row))
    return CloseResult(row, closed=True)
