"""OpenTelemetry spans -> orchestration trace: the mapping shared by the Jaeger, OTel SDK and OTLP
importers, which only decode their encoding into `Span` and call `build_trace`.

Modules: `span` (the record, ids), `keys` (every attribute name read, from the convention
packages), `semconv` (attribute readers), `openinference` (flattened lists, hand-off spans),
`genai` (transfers, callers, evaluations, token details), `agents` (agent assignment), `build`
(events and edges), `fields` (trace-level fields). The mapping, attribute by attribute:
docs/otel-mapping.md.
"""

from .build import build_trace
from .semconv import (
    Message,
    agent_label,
    entities,
    model_name,
    received_message,
    render,
    span_io,
    span_role,
    tool_name,
    usage,
)
from .span import SPAN_FIELDS, Span, SpanEvent, SpanLink, as_int, bytes_id, canonical_order, hex_id

__all__ = [
    "SPAN_FIELDS",
    "Message",
    "Span",
    "SpanEvent",
    "SpanLink",
    "agent_label",
    "as_int",
    "build_trace",
    "bytes_id",
    "canonical_order",
    "entities",
    "hex_id",
    "model_name",
    "received_message",
    "render",
    "span_io",
    "span_role",
    "tool_name",
    "usage",
]
