"""OpenTelemetry spans -> orchestration trace: the mapping shared by the Jaeger, OTel SDK and OTLP
importers, which only decode their encoding into `Span` and call `build_trace`.

Modules: `span` (the record, ids), `semconv` (attribute readers), `agents` (agent assignment),
`build` (events and edges). The mapping, attribute by attribute: docs/otel-mapping.md.
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
from .span import SPAN_FIELDS, Span, SpanEvent, as_int, bytes_id, canonical_order, hex_id

__all__ = [
    "SPAN_FIELDS",
    "Message",
    "Span",
    "SpanEvent",
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
