"""OTLP/JSON: the OpenTelemetry protocol's `ExportTraceServiceRequest` (a collector's file exporter
writes one per line), and `decode_protobuf` for its binary form (`application/x-protobuf`).

Shape (the protobuf JSON mapping):

    {resourceSpans: [{resource: {attributes}, scopeSpans: [{scope: {name, version},
      spans: [{traceId, spanId, parentSpanId, name, kind, startTimeUnixNano, endTimeUnixNano,
               attributes, events: [{timeUnixNano, name, attributes}], status: {code, message}}]}]}]}

Attributes are `[{key, value: {stringValue | intValue | doubleValue | boolValue | bytesValue |
arrayValue: {values} | kvlistValue: {values}}}]`; 64-bit integers may be strings. Ids are hex or,
as the protobuf JSON mapping writes bytes, base64. snake_case keys (`resource_spans`) and the older
`instrumentationLibrarySpans` are accepted. Ids and start times are required; malformed
attributes and events are skipped. Spans may come in any order and any number of requests
(children before their parents): `build` links them once all have arrived. The GenAI semantic
conventions (`invoke_agent`, `execute_tool`, `chat`, `gen_ai.agent.name`, `gen_ai.usage.*`) are
read by `spans.build_trace`.
"""

from __future__ import annotations

from typing import Any

from webapp.core.model import Trace

from .spans import Span, SpanEvent, as_int, build_trace, normalise_id

FORMAT = "otlp"
SPAN_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS_ERROR = 2


def _get(obj: dict, camel: str) -> Any:
    """`obj[camel]`, else its snake_case spelling (protobuf JSON accepts both)."""
    if camel in obj:
        return obj[camel]
    return obj.get("".join(f"_{c.lower()}" if c.isupper() else c for c in camel))


def _requests(doc: Any) -> list[dict] | None:
    requests = doc if isinstance(doc, list) else [doc]
    if requests and all(isinstance(r, dict) and isinstance(_get(r, "resourceSpans"), list) for r in requests):
        return requests
    return None


def sniff(doc: Any) -> bool:
    return _requests(doc) is not None


def any_value(value: Any) -> Any:
    """An OTLP `AnyValue` as a plain value: int for `intValue` (given as string or number), lists for
    `arrayValue`, dicts for `kvlistValue`, the base64 text for `bytesValue`; None when empty."""
    if not isinstance(value, dict) or not value:
        return None
    kind, inner = next(iter(value.items()))
    try:
        if kind in ("intValue", "int_value"):
            return int(inner)
        if kind in ("doubleValue", "double_value"):
            return float(inner)
    except (TypeError, ValueError):
        return inner
    if kind in ("arrayValue", "array_value", "kvlistValue", "kvlist_value"):
        values = inner.get("values") if isinstance(inner, dict) else None
        values = values if isinstance(values, list) else []
        return [any_value(v) for v in values] if kind.startswith("array") else attributes(values)
    return inner


def attributes(items: list[dict] | None) -> dict[str, Any]:
    """OTLP `[{key, value: AnyValue}]` as a dict; malformed items are skipped."""
    return {str(item["key"]): any_value(item.get("value"))
            for item in (items if isinstance(items, list) else []) if isinstance(item, dict) and "key" in item}


def split(doc: Any) -> dict[str, list[dict]]:
    """Trace id (hex) -> records `{"span": <OTLP span>, "resource": <its resource's attributes>}`."""
    chunks: dict[str, list[dict]] = {}
    for request in _requests(doc) or []:
        for resource_spans in _get(request, "resourceSpans"):
            resource = resource_spans.get("resource")
            resource = attributes(resource.get("attributes")) if isinstance(resource, dict) else {}
            scopes = _get(resource_spans, "scopeSpans") or _get(resource_spans, "instrumentationLibrarySpans") or []
            for scope_spans in scopes:
                for span in scope_spans.get("spans") or []:
                    trace_id = normalise_id(_get(span, "traceId"), 16)
                    chunks.setdefault(trace_id, []).append({"span": span, "resource": resource})
    return chunks


def build(trace_id: str, records: list[dict], sources: list[str]) -> Trace:
    """One orchestration trace from the records of `split` (possibly from several requests/files)."""
    return build_trace([_span(trace_id, r) for r in records], source_format=FORMAT, trace_id=trace_id,
                       sources=sources)


def _kind(value: Any) -> str | None:
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return SPAN_KINDS.get(int(value))
    return str(value).removeprefix("SPAN_KIND_").lower() if value else None


def _span(trace_id: str, record: dict) -> Span:
    span = record["span"]
    status = span.get("status") if isinstance(span.get("status"), dict) else {}
    code = status.get("code")
    error = None
    if code in (STATUS_ERROR, str(STATUS_ERROR), "STATUS_CODE_ERROR"):
        error = str(status.get("message") or "")
    start = int(_get(span, "startTimeUnixNano"))
    end = int(_get(span, "endTimeUnixNano") or start)
    events = span.get("events") if isinstance(span.get("events"), list) else []
    return Span(
        trace_id=trace_id,
        span_id=normalise_id(_get(span, "spanId"), 8),
        parent_id=normalise_id(_get(span, "parentSpanId"), 8),
        name=str(span.get("name", "")),
        start_ns=start,
        end_ns=max(end, start),
        attributes=attributes(span.get("attributes")),
        events=[SpanEvent(name=str(e.get("name", "")), time_ns=as_int(_get(e, "timeUnixNano")),
                          attributes=attributes(e.get("attributes")))
                for e in events if isinstance(e, dict)],
        service=record["resource"].get("service.name"),
        kind=_kind(span.get("kind")),
        error=error,
    )


def decode_protobuf(data: bytes) -> dict:
    """An `application/x-protobuf` ExportTraceServiceRequest as the OTLP/JSON dict `sniff` reads
    (camelCase keys, 64-bit integers as strings, ids in base64). Gzip is the caller's to undo.

    Raises ValueError when `data` is not such a message.
    """
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        request = ExportTraceServiceRequest.FromString(data)
    except DecodeError as exc:
        raise ValueError(f"not an OTLP ExportTraceServiceRequest: {exc}") from None
    return {"resourceSpans": [], **MessageToDict(request)}  # an empty export request is valid OTLP
