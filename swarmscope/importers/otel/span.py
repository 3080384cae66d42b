"""The OpenTelemetry span record shared by the span importers (Jaeger, OTel SDK, OTLP).

`Span` / `SpanEvent` / `SpanLink` hold one span decoded from any encoding; `hex_id` / `bytes_id` normalise ids,
`as_int` reads integer attribute values, `canonical_order` fixes the order duplicates resolve in.
How spans map to an orchestration trace: docs/otel-mapping.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import wraps
from typing import Any, TypeVar


@dataclass(frozen=True)
class SpanEvent:
    """A span event (Jaeger: a log): `time_ns` in nanoseconds since the Unix epoch, or None."""

    name: str
    time_ns: int | None
    attributes: dict[str, Any]


@dataclass(frozen=True)
class SpanLink:
    """A span link (OTLP `links[]`, Jaeger FOLLOWS_FROM across traces): the linked span's ids
    (lower-case hex, as `Span` ids) and the link's attributes. The mapping makes a link within the
    trace a `causal` edge (docs/otel-mapping.md, "Other edges")."""

    trace_id: str
    span_id: str
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Span:
    """One OpenTelemetry span, decoded from any encoding.

    Ids are lower-case hex (`trace_id` 32 digits, span ids 16); a decoder gives `span_id` None for
    an empty or all-zero id (`SpanTree` rejects such spans; `sid` is the id of an accepted one, the
    `span_id` it was made with, and unset, AttributeError, on a span without one).
    Times are integer nanoseconds since the Unix epoch. `attributes` are flat key -> scalar/list/dict
    values. `service` is the resource's `service.name`; `kind` the span kind in lower case ("client",
    "server", ...); `error` the status description when the status is ERROR ("" when it gave none), else None.
    `missing` marks a placeholder for a parent span that never arrived. `links` are the span's links
    (decoders that read none leave it empty). `memo`, where a holder of spans that never change
    sets it to a dict, keeps what the mapping computed from this span alone (`span_memo`); it is
    not part of the span (not compared, stored or copied by `replace`). Slots, not a `__dict__`: a
    worker keeps every span of the traces it derives (webapp.traces.span_ingest).
    """

    trace_id: str
    span_id: str | None
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)
    service: str | None = None
    kind: str | None = None
    error: str | None = None
    missing: bool = False
    links: list[SpanLink] = field(default_factory=list)
    memo: dict[str, Any] | None = field(default=None, init=False, compare=False, repr=False)
    sid: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.service, str) or not self.service:
            self.service = None  # a service name that is not text names nothing
        if self.span_id is not None:
            self.sid = self.span_id  # a plain slot: the mapping reads it at every step

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (how OTLP spans are stored between requests); `from_dict` reads it."""
        data = {name: getattr(self, name) for name in SPAN_FIELDS}
        data["attributes"] = self.attributes
        data["events"] = [{"name": e.name, "time_ns": e.time_ns, "attributes": e.attributes} for e in self.events]
        if self.links:
            data["links"] = [
                {"trace_id": k.trace_id, "span_id": k.span_id, "attributes": k.attributes} for k in self.links
            ]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Span:
        fields: dict[str, Any] = {name: data.get(name) for name in SPAN_FIELDS}
        return cls(
            **fields,
            attributes=data.get("attributes") or {},
            events=[
                SpanEvent(e["name"], e.get("time_ns"), e.get("attributes") or {}) for e in data.get("events") or []
            ],
            links=[SpanLink(k["trace_id"], k["span_id"], k.get("attributes") or {}) for k in data.get("links") or []],
        )


Result = TypeVar("Result")


def span_memo(function: Callable[[Span], Result]) -> Callable[[Span], Result]:
    """`function` of one span, kept in `span.memo` where the span has one: a worker that keeps a
    trace's spans between derivations (webapp.traces.span_ingest) maps a span's role, label, texts
    and message fields once. Only for functions of the span alone whose result callers do not
    change; importers that change a span's attributes leave `memo` None. Each kept result is a dict
    entry on every kept span: readers used only through a memoised caller are not memoised."""
    key = f"{function.__module__}.{function.__qualname__}"

    @wraps(function)
    def memoized(span: Span) -> Result:
        memo = span.memo
        if memo is None:
            return function(span)
        try:
            return memo[key]
        except KeyError:
            value = memo[key] = function(span)
            return value

    return memoized


SPAN_FIELDS = ("trace_id", "span_id", "parent_id", "name", "start_ns", "end_ns", "service", "kind", "error")


def canonical_order(spans: Iterable[Span]) -> list[Span]:
    """`spans` sorted by (start, span id, end, name): an order that depends on the set of spans only.
    Keeping the first record of each span id in it keeps the earliest-starting one."""
    return sorted(spans, key=lambda s: (s.start_ns, s.span_id or "", s.end_ns, s.name))


# --- ids and values -------------------------------------------------------------------------------


HEX_ID = re.compile(r"[0-9a-f]+")


def hex_id(value: Any, size: int, *, prefix: bool = False) -> str | None:
    """A trace (`size` 16 bytes) or span (8 bytes) id written as hex text, as lower-case hex of
    `2 * size` digits (shorter text is left-padded: Jaeger writes 64-bit trace ids); None when
    empty or all zeros (no id, OTLP spec). `prefix` allows the "0x" the OTel SDK's JSON writes.

    Raises ValueError naming the value when it is not hex of at most `2 * size` digits.
    """
    if value is None or value == "":
        return None
    text = str(value).strip().lower()
    if prefix and text.startswith("0x"):
        text = text[2:]
    if not HEX_ID.fullmatch(text) or len(text) > 2 * size:
        raise ValueError(f"id {value!r} is not hex of at most {2 * size} digits")
    text = text.zfill(2 * size)
    return None if text.count("0") == len(text) else text


def bytes_id(raw: bytes, size: int) -> str | None:
    """An id given as bytes (OTLP/protobuf) as lower-case hex; None when empty or all zeros.

    Raises ValueError when it is not `size` bytes long.
    """
    if not raw:
        return None
    if len(raw) != size:
        raise ValueError(f"id {raw.hex()!r} is {len(raw)} bytes, expected {size}")
    return None if raw.count(0) == size else raw.hex()


def as_int(value: Any) -> int | None:
    """An integer attribute value (also given as a string or an integral float), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None
