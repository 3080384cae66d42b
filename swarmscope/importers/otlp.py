"""OTLP/JSON: the OpenTelemetry protocol's `ExportTraceServiceRequest` (a collector's file exporter
writes one per line), and `decode_protobuf` for its binary form (`application/x-protobuf`); the
logs signal's `ExportLogsServiceRequest` (`split_logs`, `decode_logs_protobuf`, below), whose GenAI
content events `attach_logs` adds to their spans as span events.

Shape (the protobuf JSON mapping):

    {resourceSpans: [{resource: {attributes}, scopeSpans: [{scope: {name, version},
      spans: [{traceId, spanId, parentSpanId, name, kind, startTimeUnixNano, endTimeUnixNano,
               attributes, events: [{timeUnixNano, name, attributes}], status: {code, message},
               links: [{traceId, spanId, attributes}]}]}]}]}

Attributes are `[{key, value: {stringValue | intValue | doubleValue | boolValue | bytesValue |
arrayValue: {values} | kvlistValue: {values}}}]`; 64-bit integers may be strings. Ids are hex as the
OTLP spec writes them (or base64, as the plain protobuf JSON mapping writes bytes: `json_id`); in
protobuf they are bytes (`decode_protobuf`). snake_case keys (`resource_spans`) and the older
`instrumentationLibrarySpans` are accepted. Ids and start times are required; malformed
attributes, events and links are skipped; a token count out of 0..2**31 - 1 (`otel.tokens`) is
refused. Spans may come in any order and any number of requests (children before their parents):
`build` links them once all have arrived. The GenAI semantic conventions (`invoke_agent`,
`execute_tool`, `chat`, `gen_ai.agent.name`, `gen_ai.usage.*`) are read by `spans.build_trace`.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from dataclasses import dataclass, field, replace
from typing import Any

from swarmscope.model import Trace

from .otel import Span, SpanEvent, SpanLink, as_int, build_trace, bytes_id, hex_id
from .otel.tokens import token_refusal

FORMAT = "otlp"
HEX_DIGITS = "0123456789abcdefABCDEF"
SPAN_KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
STATUS_ERROR = 2


def _get(obj: dict, camel: str) -> Any:
    """`obj[camel]`, else its snake_case spelling (protobuf JSON accepts both)."""
    if camel in obj:
        return obj[camel]
    return obj.get(_snake(camel))


@functools.cache
def _snake(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)


def _requests(doc: Any) -> list[dict] | None:
    requests = doc if isinstance(doc, list) else [doc]
    if requests and all(isinstance(r, dict) and isinstance(_get(r, "resourceSpans"), list) for r in requests):
        return requests
    return None


def sniff(doc: Any) -> bool:
    return _requests(doc) is not None


def any_value(value: Any) -> Any:
    """An OTLP `AnyValue` as a plain value: int for `intValue` (given as string or number), lists for
    `arrayValue`, dicts for `kvlistValue`, for `bytesValue` the JSON text it holds, else its base64 text
    (`bytes_text`); None when empty."""
    if not isinstance(value, dict) or not value:
        return None
    if len(value) == 1 and "stringValue" in value:  # most values: read before the general case
        return value["stringValue"]
    kind, inner = next(iter(value.items()))
    try:
        if kind in ("intValue", "int_value"):
            return int(inner)
        if kind in ("doubleValue", "double_value"):
            return float(inner)
    except (TypeError, ValueError):
        return inner
    if kind in ("bytesValue", "bytes_value") and isinstance(inner, str):
        try:
            return bytes_text(base64.b64decode(inner, validate=True))
        except ValueError:
            return inner
    if kind in ("arrayValue", "array_value", "kvlistValue", "kvlist_value"):
        values = inner.get("values") if isinstance(inner, dict) else None
        values = values if isinstance(values, list) else []
        return [any_value(v) for v in values] if kind.startswith("array") else attributes(values)
    return inner


def attributes(items: list[dict] | None) -> dict[str, Any]:
    """OTLP `[{key, value: AnyValue}]` as a dict; malformed items are skipped."""
    return {
        str(item["key"]): any_value(item.get("value"))
        for item in (items if isinstance(items, list) else [])
        if isinstance(item, dict) and "key" in item
    }


def split(doc: Any) -> dict[str, list[Span]]:
    """Trace id (hex) -> its spans, decoded (`build` maps them). Raises ValueError naming where a
    part is not an object or list, or the span and field of a malformed id, time or token count."""
    chunks: dict[str, list[Span]] = {}
    for r, request in enumerate(_requests(doc) or []):
        for i, resource_spans in enumerate(_objects(_get(request, "resourceSpans"), f"request {r}: resourceSpans")):
            where = f"resourceSpans[{i}]"
            resource = resource_spans.get("resource")
            resource = attributes(resource.get("attributes")) if isinstance(resource, dict) else {}
            scopes = _get(resource_spans, "scopeSpans") or _get(resource_spans, "instrumentationLibrarySpans") or []
            for j, scope_spans in enumerate(_objects(scopes, f"{where}.scopeSpans")):
                for k, span in enumerate(_objects(scope_spans.get("spans") or [], f"{where}.scopeSpans[{j}].spans")):
                    try:
                        decoded = check_span(span_from_json(span, resource))
                    except (KeyError, TypeError, ValueError) as exc:
                        raise ValueError(
                            f"{where}.scopeSpans[{j}].spans[{k}] ({span.get('name')!r}): {_reason(exc)}"
                        ) from None
                    chunks.setdefault(decoded.trace_id, []).append(decoded)
    return chunks


def _objects(value: Any, where: str) -> list[dict]:
    """`value` when it is a list of JSON objects; raises ValueError naming `where` otherwise."""
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ValueError(f"{where} must be a list of objects")
    return value


def to_spans(trace_id: str, records: list[Span | LogRecord]) -> list[Span]:
    """The records of `split` (spans) and of `otlp_logs.split` (log records of the same trace id,
    `otlp_logs` files joined to this format's traces): the spans, each log record added to its
    span as a span event (`attach_logs`), as /v1/logs joins them; equal log records once."""
    spans = [r for r in records if isinstance(r, Span)]
    logs = _unique_logs(records)
    return attach_logs(spans, logs) if logs else spans


def build(trace_id: str, records: list[Span | LogRecord], sources: list[str]) -> Trace:
    """One orchestration trace from the spans of `split` (possibly from several requests/files),
    with the log records of `otlp_logs` files joined (`to_spans`): then its attributes count them
    (`log_records`), as a trace stored by /v1/traces and /v1/logs does."""
    trace = build_trace(to_spans(trace_id, records), source_format=FORMAT, trace_id=trace_id, sources=sources)
    logs = _unique_logs(records)
    if logs:
        trace.attributes["log_records"] = len(logs)
    return trace


#: Why log records of a trace id make no trace (`incomplete`): the spans are what they join.
LOGS_WITHOUT_SPANS = (
    "OTLP log records of a trace whose OTLP spans are not in this import (log records join the spans "
    "of their trace id, as /v1/logs joins them: import the logs file together with its spans file or "
    "files, e.g. their folder)"
)
LOGS_WITHOUT_TRACE = "OTLP log records without a trace id (they name no span to join)"


def incomplete(trace_id: str | None, records: list[Span | LogRecord]) -> str | None:
    """Why the records of one trace id make no trace, else None: log records alone, without a span
    of their trace (`read_files` reports it as a skip, naming the trace ids)."""
    if any(isinstance(r, Span) for r in records):
        return None
    return LOGS_WITHOUT_TRACE if trace_id is None else LOGS_WITHOUT_SPANS


def _unique_logs(records: list[Span | LogRecord]) -> list[LogRecord]:
    """The log records among `records`, in order, each equal record once (a file given twice, an
    exporter's retry), as /v1/logs stores them."""
    unique: dict[str, LogRecord] = {}
    for record in records:
        if isinstance(record, LogRecord):
            unique.setdefault(json.dumps(record.to_dict(), sort_keys=True, default=str), record)
    return list(unique.values())


def _reason(exc: Exception) -> str:
    return f"missing field {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)


def json_id(value: Any, size: int, field: str) -> str | None:
    """An id of OTLP/JSON as lower-case hex: `2 * size` hex digits as the OTLP spec writes them, or
    the base64 of `size` bytes as the plain protobuf JSON mapping does (4 * ceil(size / 3)
    characters: the two forms never have the same length). None when empty or all zeros.

    Raises ValueError naming `field` for any other text.
    """
    if value is None or value == "":
        return None
    text = str(value)
    if len(text) == 2 * size and not text.strip(HEX_DIGITS):  # the usual form, as `hex_id` reads it
        text = text.lower()
        return text if text.strip("0") else None
    if len(text) == 2 * size:
        try:
            return hex_id(text, size)
        except ValueError:
            pass
    elif len(text) == 4 * -(-size // 3):
        try:
            return bytes_id(base64.b64decode(text, validate=True), size)
        except (binascii.Error, ValueError):
            pass
    raise ValueError(f"{field} {value!r} is neither {2 * size} hex digits nor the base64 of {size} bytes")


def unix_nano(value: Any, field: str) -> int:
    """A time in nanoseconds since the Unix epoch (an integer, or its decimal text as OTLP/JSON
    writes 64-bit integers), 1 .. 2**64 - 1 as protobuf's fixed64 holds it; 0 means unset."""
    number = as_int(value)
    if number is None or not 0 < number < 2**64:
        raise ValueError(f"{field} {value!r} is not a time in nanoseconds since the epoch (required)")
    return number


def _kind(value: Any) -> str | None:
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return SPAN_KINDS.get(int(value))
    return str(value).removeprefix("SPAN_KIND_").lower() if value else None


def _error(status: Any) -> str | None:
    """The status description when the status code is ERROR ("" when it gave none), else None."""
    status = status if isinstance(status, dict) else {}
    if status.get("code") in (STATUS_ERROR, str(STATUS_ERROR), "STATUS_CODE_ERROR"):
        return str(status.get("message") or "")
    return None


def check_span(span: Span) -> Span:
    """`span`, when the token counts it reports are counts (`otel.tokens.token_refusal`); raises
    ValueError naming its id and the attribute otherwise, as for a malformed id or time."""
    refusal = token_refusal(span)
    if refusal is not None:
        raise ValueError(f"span {span.span_id or '(no id)'}: {refusal}")
    return span


def span_from_json(span: dict, resource: dict[str, Any]) -> Span:
    """One OTLP/JSON span (with its resource's attributes) decoded. Raises KeyError, TypeError or
    ValueError on a missing or malformed id or time."""
    start = unix_nano(_get(span, "startTimeUnixNano"), "startTimeUnixNano")
    end = unix_nano(_get(span, "endTimeUnixNano") or start, "endTimeUnixNano")
    raw_events = span.get("events")
    events = raw_events if isinstance(raw_events, list) else []
    trace_id = json_id(_get(span, "traceId"), 16, "traceId")
    if trace_id is None:
        raise ValueError("traceId is empty")
    return Span(
        trace_id=trace_id,
        span_id=json_id(_get(span, "spanId"), 8, "spanId"),
        parent_id=json_id(_get(span, "parentSpanId"), 8, "parentSpanId"),
        name=str(span.get("name", "")),
        start_ns=start,
        end_ns=max(end, start),
        attributes=with_trace_resource(attributes(span.get("attributes")), resource),
        events=[
            SpanEvent(
                name=str(e.get("name", "")),
                time_ns=as_int(_get(e, "timeUnixNano")) or None,
                attributes=attributes(e.get("attributes")),
            )
            for e in events
            if isinstance(e, dict)
        ],
        service=resource.get("service.name"),
        kind=_kind(span.get("kind")),
        error=_error(span.get("status")),
        links=_json_links(span.get("links")),
    )


def with_trace_resource(attrs: dict[str, Any], resource: dict[str, Any]) -> dict[str, Any]:
    """`attrs` of a span, and on the root span of a Swarmscope export (`swarmscope.trace.identity_key`)
    also the resource's trace-level attributes that the exporter writes there (`swarmscope.*`:
    labels, rewards, costs; `gen_ai.conversation.id`), which a span does not otherwise keep."""
    if "swarmscope.trace.identity_key" in attrs:
        for key, value in resource.items():
            if key.startswith("swarmscope.") or key == "gen_ai.conversation.id":
                attrs.setdefault(key, value)
    return attrs


def _json_links(links: Any) -> list[SpanLink]:
    """OTLP/JSON span `links` ([{traceId, spanId, attributes}]); a malformed link is skipped, as
    malformed events and attributes are."""
    decoded = []
    for link in links if isinstance(links, list) else []:
        if not isinstance(link, dict):
            continue
        try:
            trace_id = json_id(_get(link, "traceId"), 16, "traceId")
            span_id = json_id(_get(link, "spanId"), 8, "spanId")
        except ValueError:
            continue
        if trace_id and span_id:
            decoded.append(SpanLink(trace_id, span_id, attributes(link.get("attributes"))))
    return decoded


def _pb_links(links) -> list[SpanLink]:
    """Protobuf span links, as `_json_links` reads them (ids as bytes)."""
    decoded = []
    for link in links:
        try:
            trace_id, span_id = bytes_id(link.trace_id, 16), bytes_id(link.span_id, 8)
        except ValueError:
            continue
        if trace_id and span_id:
            decoded.append(SpanLink(trace_id, span_id, _pb_attributes(link.attributes)))
    return decoded


def decode_protobuf(data: bytes) -> dict[str, list[Span]]:
    """An `application/x-protobuf` ExportTraceServiceRequest as `split` gives it: trace id (hex)
    -> spans. Ids are bytes there (OTLP spec), read as such. Gzip is the caller's to undo.

    Raises ValueError when `data` is not such a message, or naming the span of a malformed id,
    time or token count.
    """
    # protobuf is heavy: loaded on first use, not when the importers are imported
    from google.protobuf.message import DecodeError  # noqa: PLC0415
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: PLC0415
        ExportTraceServiceRequest,
    )

    try:
        request = ExportTraceServiceRequest.FromString(data)
    except DecodeError as exc:
        raise ValueError(f"not an OTLP ExportTraceServiceRequest: {exc}") from None
    chunks: dict[str, list[Span]] = {}
    for resource_spans in request.resource_spans:
        resource = _pb_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for index, span in enumerate(scope_spans.spans):
                try:
                    trace_id = bytes_id(span.trace_id, 16)
                    if trace_id is None:
                        raise ValueError("trace_id is required")
                    unix_nano(span.start_time_unix_nano, "start_time_unix_nano")
                    decoded = Span(
                        trace_id=trace_id,
                        span_id=bytes_id(span.span_id, 8),
                        parent_id=bytes_id(span.parent_span_id, 8),
                        name=span.name,
                        start_ns=span.start_time_unix_nano,
                        end_ns=max(span.end_time_unix_nano or span.start_time_unix_nano, span.start_time_unix_nano),
                        attributes=with_trace_resource(_pb_attributes(span.attributes), resource),
                        events=[
                            SpanEvent(
                                name=e.name, time_ns=e.time_unix_nano or None, attributes=_pb_attributes(e.attributes)
                            )
                            for e in span.events
                        ],
                        service=resource.get("service.name"),
                        kind=SPAN_KINDS.get(span.kind),
                        error=span.status.message if span.status.code == STATUS_ERROR else None,
                        links=_pb_links(span.links),
                    )
                    check_span(decoded)
                except ValueError as exc:
                    raise ValueError(f"span {index} ({span.name!r}): {exc}") from None
                chunks.setdefault(trace_id, []).append(decoded)
    return chunks


def encode_response(rejected: int, message: str) -> bytes:
    """A serialised ExportTraceServiceResponse; `partial_success` set when spans were rejected."""
    # protobuf is heavy: loaded on first use, not when the importers are imported
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: PLC0415
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    return response.SerializeToString()


def _pb_value(value) -> Any:
    """A protobuf `AnyValue` as `any_value` reads its JSON form (bytes as base64 text)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_pb_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return _pb_attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return bytes_text(value.bytes_value)
    return getattr(value, kind)


def bytes_text(data: bytes) -> str:
    """An OTLP `bytesValue` as text: the JSON document it holds where it is UTF-8 JSON text (an
    object or a list: LangSmith 0.3's OTel exporter sets `gen_ai.prompt` / `gen_ai.completion` to
    the run's orjson bytes), else its base64 text (OTLP/JSON's form of bytes)."""
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        try:
            text = data.decode("utf-8")
            json.loads(text)
        except ValueError:
            pass
        else:
            return text
    return base64.b64encode(data).decode()


def _pb_attributes(items) -> dict[str, Any]:
    return {item.key: _pb_value(item.value) for item in items}


# --- encoding (the inverse of the decoders: tests, benchmarks and exports) -------------------------

KIND_NUMBERS = {kind: number for number, kind in SPAN_KINDS.items()}


def _json_value(value: Any) -> dict[str, Any]:
    """A plain value as an OTLP/JSON `AnyValue` (64-bit integers as strings)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_json_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": _json_attributes(value)}}
    return {"stringValue": str(value)}


def _json_attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _json_value(value)} for key, value in values.items()]


def _by_service(spans: list[Span]) -> dict[str | None, list[Span]]:
    groups: dict[str | None, list[Span]] = {}
    for span in spans:
        groups.setdefault(span.service, []).append(span)
    return groups


def encode_json(spans: list[Span]) -> dict[str, Any]:
    """`spans` as one OTLP/JSON ExportTraceServiceRequest (ids in hex, per the OTLP spec), one
    resource per service; `split` reads it back to the same spans (bytes values stay text)."""
    resource_spans = []
    for service, group in _by_service(spans).items():
        encoded = []
        for span in group:
            item = {
                "traceId": span.trace_id,
                "spanId": span.span_id,
                "name": span.name,
                "kind": KIND_NUMBERS.get(span.kind or "", 0),
                "startTimeUnixNano": str(span.start_ns),
                "endTimeUnixNano": str(span.end_ns),
                "attributes": _json_attributes(span.attributes),
                "events": [
                    {"timeUnixNano": str(e.time_ns or 0), "name": e.name, "attributes": _json_attributes(e.attributes)}
                    for e in span.events
                ],
                "status": {} if span.error is None else {"code": STATUS_ERROR, "message": span.error},
            }
            if span.parent_id:
                item["parentSpanId"] = span.parent_id
            if span.links:
                item["links"] = [
                    {"traceId": k.trace_id, "spanId": k.span_id, "attributes": _json_attributes(k.attributes)}
                    for k in span.links
                ]
            encoded.append(item)
        resource = {"attributes": _json_attributes({"service.name": service} if service else {})}
        resource_spans.append({"resource": resource, "scopeSpans": [{"spans": encoded}]})
    return {"resourceSpans": resource_spans}


def encode_protobuf(spans: list[Span]) -> bytes:
    """`spans` as one serialised OTLP/protobuf ExportTraceServiceRequest (ids as bytes);
    `decode_protobuf` reads it back to the same spans."""
    # protobuf is heavy: loaded on first use, not when the importers are imported
    from google.protobuf.json_format import ParseDict  # noqa: PLC0415
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: PLC0415
        ExportTraceServiceRequest,
    )

    doc = encode_json(spans)
    for resource_spans in doc["resourceSpans"]:
        for span in resource_spans["scopeSpans"][0]["spans"]:
            for item in [span, *span.get("links", [])]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in item:  # the protobuf JSON mapping writes bytes in base64
                        item[key] = base64.b64encode(bytes.fromhex(item[key])).decode()
    return ParseDict(doc, ExportTraceServiceRequest()).SerializeToString()


# --- logs: GenAI content events on the OTLP logs signal -----------------------------------------
#
# ExportLogsServiceRequest (OTLP spec, the protobuf JSON mapping):
#
#     {resourceLogs: [{resource: {attributes}, scopeLogs: [{scope: {name, version},
#       logRecords: [{timeUnixNano, observedTimeUnixNano, severityNumber, severityText, body,
#                     attributes, traceId, spanId, eventName, flags}]}]}]}
#
# The GenAI events of the semantic conventions (`gen_ai.system.message`, `gen_ai.user.message`,
# `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`, and the newer
# `gen_ai.client.inference.operation.details`) are log records named by `eventName` (the older
# SDKs: the `event.name` attribute) and carrying the span context of the call they belong to; the
# content is in the body (`{content, role, tool_calls}`, `gen_ai.choice`: `{index, finish_reason,
# message}`) or, for the newer event, in attributes (`gen_ai.input.messages`, ...).
# `LogRecord.to_span_event` gives the record as the span event the same content is when an SDK
# records it on the span, so the span mapping reads both the same way (`attach_logs`).


@dataclass
class LogRecord:
    """One OTLP log record, decoded. Ids are lower-case hex (None when empty or all zeros), times
    integer nanoseconds since the Unix epoch (None when unset). `event_name` is the record's
    `eventName`, else its `event.name` attribute ("" when neither). `body` is the plain value of its
    `AnyValue` body (`any_value`), `service` the resource's `service.name`."""

    trace_id: str | None
    span_id: str | None
    event_name: str
    time_ns: int | None
    observed_time_ns: int | None = None
    severity_number: int | None = None
    severity_text: str | None = None
    body: Any = None
    attributes: dict[str, Any] = field(default_factory=dict)
    service: str | None = None
    scope: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (how log records are stored); `from_dict` reads it back."""
        return {name: getattr(self, name) for name in LOG_FIELDS}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LogRecord:
        fields: dict[str, Any] = {name: data[name] for name in LOG_FIELDS if name in data}
        return cls(**fields)

    @property
    def when_ns(self) -> int | None:
        """The record's time: `time_ns`, else when the SDK observed it."""
        return self.time_ns or self.observed_time_ns

    def to_span_event(self) -> SpanEvent:
        """The record as a span event of its span: named by its event name, its attributes plus the
        body's fields (a body that is not an object becomes `content`; the body wins a clash:
        it is the event's payload by the GenAI events spec)."""
        attributes = dict(self.attributes)
        if isinstance(self.body, dict):
            attributes.update(self.body)
        elif self.body not in (None, ""):
            attributes["content"] = self.body
        return SpanEvent(name=self.event_name, time_ns=self.when_ns, attributes=attributes)


LOG_FIELDS = tuple(LogRecord.__dataclass_fields__)


def _log_requests(doc: Any) -> list[dict] | None:
    requests = doc if isinstance(doc, list) else [doc]
    if requests and all(isinstance(r, dict) and isinstance(_get(r, "resourceLogs"), list) for r in requests):
        return requests
    return None


def sniff_logs(doc: Any) -> bool:
    """Whether `doc` is an OTLP/JSON ExportLogsServiceRequest (or a list of them)."""
    return _log_requests(doc) is not None


def _optional_time(value: Any, field_name: str) -> int | None:
    """A log record's time (OTLP: optional, 0 or absent when unknown), else ValueError naming it."""
    if value in (None, "", 0, "0"):
        return None
    return unix_nano(value, field_name)


def _optional_int(value: Any, field_name: str) -> int | None:
    if value in (None, ""):
        return None
    number = as_int(value)
    if number is None:
        raise ValueError(f"{field_name} {value!r} is not an integer")
    return number


def _severity_number(value: Any) -> int | None:
    """`severityNumber`: the number, or its enum name as the protobuf JSON mapping may write it."""
    if isinstance(value, str) and value.startswith("SEVERITY_NUMBER_"):
        from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber  # noqa: PLC0415

        try:
            return SeverityNumber.Value(value)
        except ValueError:
            raise ValueError(f"severityNumber {value!r} is not a SeverityNumber") from None
    return _optional_int(value, "severityNumber")


def log_from_json(record: dict, resource: dict[str, Any], scope: str | None) -> LogRecord:
    """One OTLP/JSON log record (with its resource's attributes and scope name) decoded. Raises
    ValueError on a malformed id, time or severity number."""
    attrs = attributes(record.get("attributes"))
    return LogRecord(
        trace_id=json_id(_get(record, "traceId"), 16, "traceId"),
        span_id=json_id(_get(record, "spanId"), 8, "spanId"),
        event_name=str(_get(record, "eventName") or attrs.get("event.name") or ""),
        time_ns=_optional_time(_get(record, "timeUnixNano"), "timeUnixNano"),
        observed_time_ns=_optional_time(_get(record, "observedTimeUnixNano"), "observedTimeUnixNano"),
        severity_number=_severity_number(_get(record, "severityNumber")),
        severity_text=str(_get(record, "severityText") or "") or None,
        body=any_value(record.get("body")),
        attributes=attrs,
        service=resource.get("service.name") if isinstance(resource.get("service.name"), str) else None,
        scope=scope,
    )


def split_logs(doc: Any) -> list[LogRecord]:
    """The log records of an OTLP/JSON ExportLogsServiceRequest (or a list of them), in order.
    Raises ValueError naming where a part is not an object or list, or the record
    (`resourceLogs[i].scopeLogs[j].logRecords[k]`) and field of a malformed id, time or number."""
    records: list[LogRecord] = []
    for r, request in enumerate(_log_requests(doc) or []):
        for i, resource_logs in enumerate(_objects(_get(request, "resourceLogs"), f"request {r}: resourceLogs")):
            where = f"resourceLogs[{i}]"
            resource = resource_logs.get("resource")
            resource = attributes(resource.get("attributes")) if isinstance(resource, dict) else {}
            for j, scope_logs in enumerate(_objects(_get(resource_logs, "scopeLogs") or [], f"{where}.scopeLogs")):
                scope = scope_logs.get("scope")
                scope_name = str(scope.get("name") or "") or None if isinstance(scope, dict) else None
                items = _objects(_get(scope_logs, "logRecords") or [], f"{where}.scopeLogs[{j}].logRecords")
                for k, record in enumerate(items):
                    try:
                        records.append(log_from_json(record, resource, scope_name))
                    except (TypeError, ValueError) as exc:
                        raise ValueError(f"{where}.scopeLogs[{j}].logRecords[{k}]: {exc}") from None
    return records


def decode_logs_protobuf(data: bytes) -> list[LogRecord]:
    """An `application/x-protobuf` ExportLogsServiceRequest's log records, as `split_logs` gives
    them (ids are bytes there, OTLP spec). Gzip is the caller's to undo.

    Raises ValueError when `data` is not such a message, or naming the record
    (`resourceLogs[i].scopeLogs[j].logRecords[k]`) of a malformed id or time.
    """
    # protobuf is heavy: loaded on first use, not when the importers are imported
    from google.protobuf.message import DecodeError  # noqa: PLC0415
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # noqa: PLC0415

    try:
        request = ExportLogsServiceRequest.FromString(data)
    except DecodeError as exc:
        raise ValueError(f"not an OTLP ExportLogsServiceRequest: {exc}") from None
    records: list[LogRecord] = []
    for i, resource_logs in enumerate(request.resource_logs):
        resource = _pb_attributes(resource_logs.resource.attributes)
        service = resource.get("service.name")
        for j, scope_logs in enumerate(resource_logs.scope_logs):
            for k, record in enumerate(scope_logs.log_records):
                attributes = _pb_attributes(record.attributes)
                try:
                    trace_id = _pb_id(record.trace_id, 16, "trace_id")
                    span_id = _pb_id(record.span_id, 8, "span_id")
                    time_ns = _optional_time(record.time_unix_nano, "time_unix_nano")
                    observed = _optional_time(record.observed_time_unix_nano, "observed_time_unix_nano")
                except ValueError as exc:
                    raise ValueError(f"resourceLogs[{i}].scopeLogs[{j}].logRecords[{k}]: {exc}") from None
                records.append(
                    LogRecord(
                        trace_id=trace_id,
                        span_id=span_id,
                        event_name=record.event_name or str(attributes.get("event.name") or ""),
                        time_ns=time_ns,
                        observed_time_ns=observed,
                        severity_number=record.severity_number or None,
                        severity_text=record.severity_text or None,
                        body=_pb_value(record.body) if record.HasField("body") else None,
                        attributes=attributes,
                        service=service if isinstance(service, str) else None,
                        scope=scope_logs.scope.name or None,
                    )
                )
    return records


def _pb_id(raw: bytes, size: int, field_name: str) -> str | None:
    try:
        return bytes_id(raw, size)
    except ValueError as exc:
        raise ValueError(f"{field_name}: {exc}") from None


def encode_logs_response(rejected: int, message: str) -> bytes:
    """A serialised ExportLogsServiceResponse; `partial_success` set when records were rejected."""
    # protobuf is heavy: loaded on first use, not when the importers are imported
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (  # noqa: PLC0415
        ExportLogsServiceResponse,
    )

    response = ExportLogsServiceResponse()
    if rejected:
        response.partial_success.rejected_log_records = rejected
        response.partial_success.error_message = message
    return response.SerializeToString()


def attach_logs(spans: list[Span], records: list[LogRecord]) -> list[Span]:
    """`spans` with each log record that names one of them (by span id; the trace is the caller's)
    added to its events as `LogRecord.to_span_event` gives it, the span's events then in time
    order (events without a time keep their place at the span's start). Spans without such
    records are returned as they are; records naming no span here are left out."""
    by_span: dict[str, list[SpanEvent]] = {}
    for record in sorted(records, key=lambda r: r.when_ns or 0):
        if record.span_id:
            by_span.setdefault(record.span_id, []).append(record.to_span_event())
    if not by_span:
        return spans
    attached = []
    for span in spans:
        extra = by_span.get(span.span_id or "")
        if extra:
            events = sorted([*span.events, *extra], key=lambda e: e.time_ns or span.start_ns)
            span = replace(span, events=events)
        attached.append(span)
    return attached


def encode_logs_json(records: list[LogRecord]) -> dict[str, Any]:
    """`records` as one OTLP/JSON ExportLogsServiceRequest (ids in hex, per the OTLP spec), one
    resource per service; `split_logs` reads it back to the same records (bytes values stay text)."""
    groups: dict[tuple[str | None, str | None], list[LogRecord]] = {}
    for record in records:
        groups.setdefault((record.service, record.scope), []).append(record)
    resource_logs = []
    for (service, scope), group in groups.items():
        encoded = []
        for record in group:
            item: dict[str, Any] = {"attributes": _json_attributes(record.attributes)}
            for key, value in (
                ("traceId", record.trace_id),
                ("spanId", record.span_id),
                ("eventName", record.event_name),
                ("timeUnixNano", None if record.time_ns is None else str(record.time_ns)),
                ("observedTimeUnixNano", None if record.observed_time_ns is None else str(record.observed_time_ns)),
                ("severityNumber", record.severity_number),
                ("severityText", record.severity_text),
            ):
                if value:
                    item[key] = value
            if record.body is not None:
                item["body"] = _json_value(record.body)
            encoded.append(item)
        resource = {"attributes": _json_attributes({"service.name": service} if service else {})}
        resource_logs.append(
            {"resource": resource, "scopeLogs": [{"scope": {"name": scope or ""}, "logRecords": encoded}]}
        )
    return {"resourceLogs": resource_logs}


def encode_logs_protobuf(records: list[LogRecord]) -> bytes:
    """`records` as one serialised OTLP/protobuf ExportLogsServiceRequest (ids as bytes);
    `decode_logs_protobuf` reads it back to the same records."""
    # protobuf is heavy: loaded on first use, not when the importers are imported
    from google.protobuf.json_format import ParseDict  # noqa: PLC0415
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest  # noqa: PLC0415

    doc = encode_logs_json(records)
    for resource_logs in doc["resourceLogs"]:
        for record in resource_logs["scopeLogs"][0]["logRecords"]:
            for key in ("traceId", "spanId"):
                if key in record:  # the protobuf JSON mapping writes bytes in base64
                    record[key] = base64.b64encode(bytes.fromhex(record[key])).decode()
    return ParseDict(doc, ExportLogsServiceRequest()).SerializeToString()
