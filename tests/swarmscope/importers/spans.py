"""Spans for mapping tests, written in seconds and keyword attributes."""

from swarmscope.importers.otel import Span

SECOND = 1_000_000_000


def make_span(trace_id, sid, parent=None, name="op", start=0.0, end=1.0, **attributes):
    """A span of `trace_id` from times in seconds and attributes given as keywords (`__` for dots)."""
    return Span(
        trace_id=trace_id,
        span_id=sid.rjust(16, "0"),
        parent_id=parent.rjust(16, "0") if parent else None,
        name=name,
        start_ns=int(start * SECOND),
        end_ns=int(end * SECOND),
        service="app",
        attributes={key.replace("__", "."): value for key, value in attributes.items()},
    )
