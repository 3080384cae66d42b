"""Jaeger JSON: the trace export of the Jaeger UI and query API (`/api/traces`).

Shape: `{"data": [{"traceID", "spans": [...], "processes": {processID: {"serviceName", "tags"}}}]}`
(a bare trace object `{"traceID", "spans", "processes"}` is read too). A span:

    {traceID, spanID, operationName, references: [{refType: CHILD_OF | FOLLOWS_FROM, traceID,
     spanID}], startTime, duration (microseconds), tags: [{key, type, value}],
     logs: [{timestamp (microseconds), fields: [{key, type, value}]}], processID | process}

Ids are hex (leading zeros may be dropped: padded back). The parent is the first CHILD_OF
reference within the trace, else the first FOLLOWS_FROM one. Tags become attributes (`int64`
values may be strings), a log becomes a span event named by its `event` field, the process's
`serviceName` is the service; `span.kind`, `error` / `otel.status_code` give kind and status.
Ids and times are required (a span without them fails its file); malformed tags and logs are
skipped.
The orchestration mapping is `spans.build_trace` (one agent per service where spans name none).
"""

from __future__ import annotations

from typing import Any

from swarmscope.model import Trace

from .otel import Span, SpanEvent, build_trace, hex_id
from .otel.tokens import check_tokens

FORMAT = "jaeger"
MICROSECOND_NS = 1_000


def _traces(doc: Any) -> list[dict] | None:
    """The trace objects of a Jaeger document, or None when it is not one."""
    traces = doc.get("data") if isinstance(doc, dict) and "data" in doc else [doc]
    if not isinstance(traces, list) or not traces:
        return None
    if all(
        isinstance(t, dict) and isinstance(t.get("spans"), list) and ("traceID" in t or "processes" in t)
        for t in traces
    ):
        return traces
    return None


def sniff(doc: Any) -> bool:
    return _traces(doc) is not None


def split(doc: Any) -> dict[str | None, list[dict]]:
    """Trace id (hex; None when empty) -> records `{"span": <Jaeger span>, "process": <its process or None>}`."""
    chunks: dict[str | None, list[dict]] = {}
    for trace in _traces(doc) or []:
        processes = trace["processes"] if isinstance(trace.get("processes"), dict) else {}
        for span in trace["spans"]:
            trace_id = hex_id(span.get("traceID") or trace.get("traceID"), 16)
            process = span.get("process") or processes.get(str(span.get("processID")))
            chunks.setdefault(trace_id, []).append({"span": span, "process": process})
    return chunks


def to_spans(trace_id: str, records: list[dict]) -> list[Span]:
    """The records of `split` decoded as spans; raises ValueError naming a span with a bad token count."""
    return [check_tokens(_span(trace_id, r["span"], r["process"])) for r in records]


def build(trace_id: str, records: list[dict], sources: list[str]) -> Trace:
    """One orchestration trace from the records of `split` (possibly from several files)."""
    return build_trace(to_spans(trace_id, records), source_format=FORMAT, trace_id=trace_id, sources=sources)


def _values(fields: Any) -> dict[str, Any]:
    """Jaeger key/type/value lists as a dict (int64 strings as int); malformed items are skipped."""
    values = {}
    for item in fields if isinstance(fields, list) else []:
        if not isinstance(item, dict) or "key" not in item:
            continue
        value = item.get("value")
        if item.get("type") == "int64" and isinstance(value, str):
            try:
                value = int(value)
            except ValueError:
                pass
        values[str(item["key"])] = value
    return values


def _parent(trace_id: str, references: Any) -> str | None:
    refs = (
        [
            r
            for r in references
            if isinstance(r, dict) and "spanID" in r and hex_id(r.get("traceID") or trace_id, 16) == trace_id
        ]
        if isinstance(references, list)
        else []
    )
    for kind in ("CHILD_OF", "FOLLOWS_FROM"):
        ref = next((r for r in refs if r.get("refType") == kind), None)
        if ref is not None:
            return hex_id(ref["spanID"], 8)
    return None


def _span(trace_id: str, span: dict, process: dict | None) -> Span:
    tags = _values(span.get("tags"))
    start = int(span["startTime"]) * MICROSECOND_NS
    status = str(tags.get("otel.status_code", "")).upper()
    error = None
    if tags.get("error") in (True, "true") or status == "ERROR":
        error = str(tags.get("otel.status_description") or tags.get("error.message") or "")
    events = []
    logs = span.get("logs")
    for log in logs if isinstance(logs, list) else []:
        if isinstance(log, dict):
            fields = _values(log.get("fields"))
            timestamp = log.get("timestamp")
            events.append(
                SpanEvent(
                    name=str(fields.pop("event", "log")),
                    attributes=fields,
                    time_ns=timestamp * MICROSECOND_NS if isinstance(timestamp, int) else None,
                )
            )
    return Span(
        trace_id=trace_id,
        span_id=hex_id(span["spanID"], 8),
        parent_id=_parent(trace_id, span.get("references")) or hex_id(span.get("parentSpanID"), 8),
        name=str(span.get("operationName", "")),
        start_ns=start,
        end_ns=start + int(span.get("duration") or 0) * MICROSECOND_NS,
        attributes=tags,
        events=events,
        service=process.get("serviceName") if isinstance(process, dict) else None,
        kind=str(tags["span.kind"]).lower() if tags.get("span.kind") else None,
        error=error,
    )
