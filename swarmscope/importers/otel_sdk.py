"""OpenTelemetry SDK span lists: `ReadableSpan.to_json()` records in a JSON list (or one per line),
as the Monocle file exporter and the SDK's console/file exporters write them.

A span:

    {name, context: {trace_id, span_id, trace_state}, kind: "SpanKind.INTERNAL", parent_id,
     start_time, end_time (ISO 8601, UTC), status: {status_code: OK | ERROR | UNSET, description},
     attributes: {...}, events: [{name, timestamp, attributes}], links, resource: {attributes}}

Ids are hex, with or without the "0x" the SDK writes; ids and start times are required, malformed
attributes and events are skipped. Exporters that roll files split one trace id over several
files: `split` keys records by trace id so `read_files` merges the chunks. The orchestration
mapping (agents from Monocle entities, Agent Framework workflow messages) is `spans.build_trace`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from swarmscope.model import Trace

from .otel import Span, SpanEvent, build_trace, hex_id
from .otel.tokens import check_tokens

FORMAT = "otel_sdk"
ISO_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:?\d\d)?$")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _is_span(record: Any) -> bool:
    context = record.get("context") if isinstance(record, dict) else None
    return isinstance(context, dict) and "trace_id" in context and "span_id" in context and "name" in record


def sniff(doc: Any) -> bool:
    records = doc if isinstance(doc, list) else [doc]
    return bool(records) and all(_is_span(r) for r in records)


def split(doc: Any) -> dict[str | None, list[dict]]:
    """Trace id (hex; None when empty) -> the span records of that trace, in file order."""
    chunks: dict[str | None, list[dict]] = {}
    for record in doc if isinstance(doc, list) else [doc]:
        chunks.setdefault(hex_id(record["context"]["trace_id"], 16, prefix=True), []).append(record)
    return chunks


def to_spans(trace_id: str, records: list[dict]) -> list[Span]:
    """The records of `split` decoded as spans; raises ValueError naming a span with a bad token count."""
    return [check_tokens(_span(trace_id, r)) for r in records]


def build(trace_id: str, records: list[dict], sources: list[str]) -> Trace:
    """One orchestration trace from the records of `split` (possibly from several files)."""
    return build_trace(to_spans(trace_id, records), source_format=FORMAT, trace_id=trace_id, sources=sources)


def iso_ns(text: str) -> int:
    """Nanoseconds since the Unix epoch of an ISO 8601 time ("2026-06-11T19:02:09.614184Z";
    no zone means UTC). Raises ValueError for other text."""
    match = ISO_TIME.match(text.strip())
    if not match:
        raise ValueError(f"not an ISO 8601 time: {text!r}")
    whole, fraction, zone = match.groups()
    moment = datetime.fromisoformat(whole + ("+00:00" if zone in (None, "Z") else zone))
    return (moment - EPOCH) // timedelta(seconds=1) * 1_000_000_000 + int((fraction or "").ljust(9, "0"))


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _sequence(value: Any) -> list:
    return value if isinstance(value, list) else []


def _event(event: dict) -> SpanEvent:
    try:
        time_ns = iso_ns(event["timestamp"])
    except (KeyError, TypeError, AttributeError, ValueError):
        time_ns = None
    return SpanEvent(name=str(event.get("name", "")), time_ns=time_ns, attributes=_mapping(event.get("attributes")))


def _span(trace_id: str, record: dict) -> Span:
    status = _mapping(record.get("status"))
    error = None
    if str(status.get("status_code", "")).upper().endswith("ERROR"):
        error = str(status.get("description") or "")
    start = iso_ns(record["start_time"])
    end = iso_ns(record["end_time"]) if record.get("end_time") else start
    resource = _mapping(_mapping(record.get("resource")).get("attributes"))
    kind = record.get("kind")
    return Span(
        trace_id=trace_id,
        span_id=hex_id(record["context"]["span_id"], 8, prefix=True),
        parent_id=hex_id(record.get("parent_id"), 8, prefix=True),
        name=str(record.get("name", "")),
        start_ns=start,
        end_ns=max(end, start),
        attributes=dict(_mapping(record.get("attributes"))),
        events=[_event(e) for e in _sequence(record.get("events")) if isinstance(e, dict)],
        service=resource.get("service.name"),
        kind=str(kind).removeprefix("SpanKind.").lower() if kind else None,
        error=error,
    )
