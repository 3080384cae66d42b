"""The orchestration trace model: events, agents, edges, labels (docs/architecture.md "Domain").

An orchestration trace G = (V, E) is a temporal event graph (survey arXiv 2605.02801, §4):
events are the vertices, typed edges the arcs. Times are seconds from the trace start.
Everything here is plain dataclasses and functions; no framework imports. (Over 500 lines: the
records, their validation from JSON and the merge rule of re-sent events belong together.)
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from .inputs import text_refusal

#: The survey schema's ten event types plus `delegate` (O2) and `stop` (O5).
SURVEY_EVENT_TYPES = (
    "orchestrator_decision",
    "spawn",
    "despawn",
    "message",
    "tool_call",
    "tool_result",
    "return",
    "aggregate",
    "human_intervention",
    "safety_event",
)
EVENT_TYPES = SURVEY_EVENT_TYPES + ("delegate", "stop")

EDGE_TYPES = (
    "temporal",
    "causal",
    "spawn",
    "message",
    "tool_dependency",
    "return",
    "aggregate",
    "safety_flow",
)

#: Largest token count of one event (a 32-bit signed column).
MAX_TOKENS = 2**31 - 1
#: What a token count must be (`is_token_count`), as errors say it.
TOKENS_RULE = f"must be an integer from 0 to {MAX_TOKENS}"


def is_token_count(value: Any) -> bool:
    """True when `value` is a token count an event can hold: an int (not a bool) in 0..MAX_TOKENS."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


#: Event fields that are stored in their own column; everything else goes to `attributes`.
EVENT_FIELDS = (
    "id",
    "t",
    "t_end",
    "type",
    "agent",
    "role",
    "from",
    "to",
    "tool",
    "content",
    "content_ref",
    "tokens",
    "trusted",
)


class TraceValidationError(ValueError):
    """An event, edge or trace field is invalid.

    `index` is the event's position in its batch or file, `event_id` its id where known,
    `field` the offending field. `as_dict()` is the JSON body the API answers with.
    """

    def __init__(
        self,
        message: str,
        *,
        index: int | None = None,
        event_id: str | None = None,
        field: str | None = None,
        kind: str = "event",
    ):
        self.message = message
        self.index = index
        self.event_id = event_id
        self.field = field
        self.kind = kind
        where = []
        if index is not None:
            where.append(f"{kind} {index}")
        if event_id is not None:
            where.append(f"id {event_id!r}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)

    def as_dict(self) -> dict[str, Any]:
        return {
            "error": str(self),
            "kind": self.kind,
            "index": self.index,
            "event_id": self.event_id,
            "field": self.field,
            "message": self.message,
        }


@dataclass
class Event:
    """One vertex of the trace. `t`/`t_end` in seconds from trace start; `tokens` a count.

    `from_` is the JSON field `from`. `attributes` holds any other field of the source.
    """

    id: str
    t: float
    type: str
    agent: str
    t_end: float | None = None
    role: str | None = None
    from_: str | None = None
    to: str | None = None
    tool: str | None = None
    content: str | None = None
    content_ref: str | None = None
    tokens: int | None = None
    trusted: bool | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The native JSON form: only fields that are set, `from_` written as `from`."""
        d: dict[str, Any] = {"id": self.id, "t": self.t, "type": self.type, "agent": self.agent}
        for name in ("t_end", "role", "from_", "to", "tool", "content", "content_ref", "tokens", "trusted"):
            value = getattr(self, name)
            if value is not None:
                d["from" if name == "from_" else name] = value
        if self.attributes:
            d["attributes"] = self.attributes
        return d


@dataclass
class Agent:
    """An agent of the Dynamic Dec-POMDP: `parent` is the agent that spawned it (None for a root)."""

    name: str
    role: str | None = None
    parent: str | None = None
    spawned_at: float | None = None
    despawned_at: float | None = None
    system_prompt: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name}
        for name in ("role", "parent", "spawned_at", "despawned_at", "system_prompt"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        if self.attributes:
            d["attributes"] = self.attributes
        return d


@dataclass(frozen=True)
class Edge:
    """A typed arc between two event ids of the same trace."""

    src: str
    dst: str
    type: str

    def to_dict(self) -> dict[str, str]:
        return {"src": self.src, "dst": self.dst, "type": self.type}


@dataclass
class Label:
    """An annotation: e.g. Who&When's `mistake_agent` / `mistake_step`, MAST's `failure_mode`.

    `event_id` / `agent` point at what the label is about, where it is about one thing.
    """

    key: str
    value: Any
    event_id: str | None = None
    agent: str | None = None
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"key": self.key, "value": self.value}
        for name in ("event_id", "agent", "source"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        return d


@dataclass
class Trace:
    """An orchestration trace with its agents, events, edges, rewards, costs, metrics and labels.

    `source_format` + `source_id` form its identity (see `identity_key`). `attributes` holds
    trace-level facts such as the task question, ground truth, or `synthetic_time`.
    """

    source_format: str
    source_id: str
    name: str = ""
    system: str = ""
    topology: str = "unknown"
    task_id: str = ""
    agents: list[Agent] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)
    costs: dict[str, float] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    labels: list[Label] = field(default_factory=list)
    attributes: dict[str, Any] = field(default_factory=dict)

    @property
    def identity_key(self) -> str:
        """`<source_format>:<source_id>`; unique per stored trace (docs/architecture.md "Domain")."""
        return f"{self.source_format}:{self.source_id}"

    def agent(self, name: str) -> Agent | None:
        return next((a for a in self.agents if a.name == name), None)

    def ensure_agent(self, name: str, **fields: Any) -> Agent:
        """Return the agent called `name`, adding it (with `fields`) when absent."""
        found = self.agent(name)
        if found is None:
            found = Agent(name=name, **fields)
            self.agents.append(found)
        return found

    def to_dict(self) -> dict[str, Any]:
        """The native JSON form (lossless: `trace_from_dict(t.to_dict()) == t`)."""
        return {
            "format": "swarmscope",
            "version": 1,
            "source_format": self.source_format,
            "source_id": self.source_id,
            "name": self.name,
            "system": self.system,
            "topology": self.topology,
            "task_id": self.task_id,
            "agents": [a.to_dict() for a in self.agents],
            "events": [e.to_dict() for e in self.events],
            "edges": [e.to_dict() for e in self.edges],
            "rewards": self.rewards,
            "costs": self.costs,
            "metrics": self.metrics,
            "labels": [lb.to_dict() for lb in self.labels],
            "attributes": self.attributes,
        }


def content_hash(data: bytes | str) -> str:
    """SHA-256 hex digest of a source record: the identity of a trace whose source has no id."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def estimate_tokens(text: str | None) -> int:
    """Token estimate of `text` as characters / 4, rounded up (docs/architecture.md: flagged as estimated)."""
    return math.ceil(len(text) / 4) if text else 0


@overload
def _number(
    value: Any,
    *,
    name: str,
    index: int | None,
    event_id: str | None,
    kind: str = "event",
    optional: Literal[False] = False,
) -> float: ...
@overload
def _number(
    value: Any, *, name: str, index: int | None, event_id: str | None, kind: str = "event", optional: bool
) -> float | None: ...
def _number(
    value: Any, *, name: str, index: int | None, event_id: str | None, kind: str = "event", optional: bool = False
) -> float | None:
    if value is None and optional:
        return None
    try:  # an integer past float range (a 401-digit one) is not a finite number either
        finite = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
    except OverflowError:
        finite = False
    if not finite:
        shown = repr(value) if not isinstance(value, int) else f"an integer of {len(str(abs(value)))} digits"
        raise TraceValidationError(
            f"must be a finite number, got {shown[:200]}", index=index, event_id=event_id, field=name, kind=kind
        )
    if value < 0:
        raise TraceValidationError(
            f"must be >= 0, got {value!r}", index=index, event_id=event_id, field=name, kind=kind
        )
    return float(value)


@overload
def _string(
    value: Any, *, name: str, index: int | None, event_id: str | None, optional: Literal[False], kind: str = "event"
) -> str: ...
@overload
def _string(
    value: Any, *, name: str, index: int | None, event_id: str | None, optional: bool = True, kind: str = "event"
) -> str | None: ...
def _string(
    value: Any, *, name: str, index: int | None, event_id: str | None, optional: bool = True, kind: str = "event"
) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not optional and not value):
        raise TraceValidationError(
            f"must be {'a' if optional else 'a non-empty'} string, got {value!r:.200}",
            index=index,
            event_id=event_id,
            field=name,
            kind=kind,
        )
    refusal = text_refusal(value)
    if refusal is not None:
        raise TraceValidationError(refusal, index=index, event_id=event_id, field=name, kind=kind)
    return value


def event_from_dict(data: Any, index: int | None = None) -> Event:
    """Build an `Event` from its native/survey JSON form, checking every field.

    Raises TraceValidationError naming `index`, the event id and the field.
    Unknown fields are kept in `attributes`.
    """
    if not isinstance(data, dict):
        raise TraceValidationError(f"must be a JSON object, got {type(data).__name__}", index=index)
    raw_id = data.get("id")
    event_id = raw_id if isinstance(raw_id, str) and text_refusal(raw_id) is None else None
    if "id" not in data:
        raise TraceValidationError("is required", index=index, field="id")
    checked_id = _string(raw_id, name="id", index=index, event_id=None, optional=False)
    for required in ("t", "type", "agent"):
        if required not in data:
            raise TraceValidationError("is required", index=index, event_id=event_id, field=required)
    t = _number(data["t"], name="t", index=index, event_id=event_id)
    t_end = _number(data.get("t_end"), name="t_end", index=index, event_id=event_id, optional=True)
    if t_end is not None and t_end < t:
        raise TraceValidationError(f"must be >= t ({t}), got {t_end}", index=index, event_id=event_id, field="t_end")
    etype = data["type"]
    if etype not in EVENT_TYPES:
        raise TraceValidationError(
            f"must be one of {', '.join(EVENT_TYPES)}; got {etype!r}", index=index, event_id=event_id, field="type"
        )
    agent = _string(data["agent"], name="agent", index=index, event_id=event_id, optional=False)
    tokens = data.get("tokens")
    if tokens is not None and not is_token_count(tokens):
        raise TraceValidationError(f"{TOKENS_RULE}, got {tokens!r}", index=index, event_id=event_id, field="tokens")
    trusted = data.get("trusted")
    if trusted is not None and not isinstance(trusted, bool):
        raise TraceValidationError(
            f"must be true or false, got {trusted!r}", index=index, event_id=event_id, field="trusted"
        )
    attributes = data.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise TraceValidationError("must be an object", index=index, event_id=event_id, field="attributes")
    extra = {k: v for k, v in data.items() if k not in EVENT_FIELDS and k != "attributes"}
    return Event(
        id=checked_id,
        t=t,
        t_end=t_end,
        type=etype,
        agent=agent,
        role=_string(data.get("role"), name="role", index=index, event_id=event_id),
        from_=_string(data.get("from"), name="from", index=index, event_id=event_id),
        to=_string(data.get("to"), name="to", index=index, event_id=event_id),
        tool=_string(data.get("tool"), name="tool", index=index, event_id=event_id),
        content=_string(data.get("content"), name="content", index=index, event_id=event_id),
        content_ref=_string(data.get("content_ref"), name="content_ref", index=index, event_id=event_id),
        tokens=tokens,
        trusted=trusted,
        attributes={**extra, **attributes},
    )


def edge_from_dict(data: Any, index: int | None = None) -> Edge:
    """Build an `Edge` from `{src, dst, type}`; raises TraceValidationError naming the edge index."""
    if not isinstance(data, dict):
        raise TraceValidationError("must be a JSON object", index=index, kind="edge")
    for name in ("src", "dst"):
        value = data.get(name)
        if not isinstance(value, str) or not value:
            raise TraceValidationError(
                f"must be a non-empty string, got {value!r}", index=index, field=name, kind="edge"
            )
    if data.get("type") not in EDGE_TYPES:
        raise TraceValidationError(
            f"must be one of {', '.join(EDGE_TYPES)}; got {data.get('type')!r}", index=index, field="type", kind="edge"
        )
    return Edge(src=data["src"], dst=data["dst"], type=data["type"])


def agent_from_dict(data: Any, index: int | None = None) -> Agent:
    """Build an `Agent` from `{name, role?, parent?, spawned_at?, despawned_at?, system_prompt?,
    attributes?}`; raises TraceValidationError naming the agent index and the field."""
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
        raise TraceValidationError("needs a non-empty string 'name'", index=index, field="name", kind="agent")
    where: dict[str, Any] = {"index": index, "event_id": None, "kind": "agent"}
    attributes = data.get("attributes") or {}
    if not isinstance(attributes, dict):
        raise TraceValidationError("must be an object", field="attributes", **where)
    return Agent(
        name=_string(data["name"], name="name", optional=False, **where),
        role=_string(data.get("role"), name="role", **where),
        parent=_string(data.get("parent"), name="parent", **where),
        spawned_at=_number(data.get("spawned_at"), name="spawned_at", optional=True, **where),
        despawned_at=_number(data.get("despawned_at"), name="despawned_at", optional=True, **where),
        system_prompt=_string(data.get("system_prompt"), name="system_prompt", **where),
        attributes=dict(attributes),
    )


def label_from_dict(data: Any, index: int | None = None) -> Label:
    """Build a `Label` from `{key, value, event_id?, agent?, source?}`; raises TraceValidationError
    naming the label index and the field."""
    if not isinstance(data, dict) or not isinstance(data.get("key"), str):
        raise TraceValidationError("needs a string 'key'", index=index, field="key", kind="label")
    where: dict[str, Any] = {"index": index, "event_id": None, "kind": "label"}
    return Label(
        key=_string(data["key"], name="key", optional=False, **where) if data["key"] else "",
        value=data.get("value"),
        event_id=_string(data.get("event_id"), name="event_id", **where),
        agent=_string(data.get("agent"), name="agent", **where),
        source=_string(data.get("source"), name="source", **where),
    )


def within_float_range(number: float) -> bool:
    """Whether `number` (an int or a float) is a finite float or converts to one: False for NaN,
    ±Infinity and an integer of 310+ digits (which `math.isfinite` cannot even take)."""
    try:
        return math.isfinite(number)
    except OverflowError:
        return False


def float_range_values(value: Any, name: str) -> dict[str, Any]:
    """A trace's `rewards`, `costs` or `metrics` (a JSON object, or None for none) as a dict, every
    number in it, nested too, within float range: an integer of 310+ digits, NaN or ±Infinity is
    refused with TraceValidationError naming `name.key`, so nothing downstream (the headline
    reward, exports) meets a number it cannot convert."""
    values = dict(value or {})

    def check(item: Any, path: str) -> None:
        if isinstance(item, dict):
            for key, inner in item.items():
                check(inner, f"{path}.{key}")
        elif isinstance(item, list):
            for i, inner in enumerate(item):
                check(inner, f"{path}[{i}]")
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            if not within_float_range(item):
                shown = f"an integer of {len(str(abs(item)))} digits" if isinstance(item, int) else repr(item)
                raise TraceValidationError(
                    f"must be a finite number within float range (about ±1.8e308), got {shown}",
                    field=path,
                    kind="trace",
                )

    check(values, name)
    return values


def trace_from_dict(data: dict[str, Any]) -> Trace:
    """Inverse of `Trace.to_dict`; checks every event and edge (see `validate_trace`)."""
    trace = Trace(
        source_format=data.get("source_format") or "native",
        source_id=str(data.get("source_id") or data.get("trace_id") or ""),
        name=data.get("name") or "",
        system=data.get("system") or "",
        topology=data.get("topology") or "unknown",
        task_id=data.get("task_id") or "",
        agents=[agent_from_dict(a, i) for i, a in enumerate(data.get("agents") or [])],
        events=[event_from_dict(e, i) for i, e in enumerate(data.get("events") or [])],
        edges=[edge_from_dict(e, i) for i, e in enumerate(data.get("edges") or [])],
        rewards=float_range_values(data.get("rewards"), "rewards"),
        costs=float_range_values(data.get("costs"), "costs"),
        metrics=float_range_values(data.get("metrics"), "metrics"),
        labels=[label_from_dict(lb, i) for i, lb in enumerate(data.get("labels") or [])],
        attributes=dict(data.get("attributes") or {}),
    )
    if not trace.source_id:
        trace.source_id = content_hash(json.dumps(data, sort_keys=True, default=str))
    validate_trace(trace)
    return trace


def validate_trace(trace: Trace) -> None:
    """Check ids are unique, edges join known events, and agents named by events exist.

    Agents referenced by events but not declared are added (role from the event).
    Raises TraceValidationError naming the event or edge index and the field.
    """
    seen: set[str] = set()
    for index, event in enumerate(trace.events):
        if event.type not in EVENT_TYPES:
            raise TraceValidationError(f"unknown type {event.type!r}", index=index, event_id=event.id, field="type")
        if event.id in seen:
            raise TraceValidationError("duplicate event id", index=index, event_id=event.id, field="id")
        seen.add(event.id)
    for index, edge in enumerate(trace.edges):
        for name in ("src", "dst"):
            if getattr(edge, name) not in seen:
                raise TraceValidationError(
                    f"names unknown event {getattr(edge, name)!r}", index=index, field=name, kind="edge"
                )
        if edge.type not in EDGE_TYPES:
            raise TraceValidationError(f"unknown type {edge.type!r}", index=index, field="type", kind="edge")
    names = {a.name for a in trace.agents}
    for event in trace.events:
        if event.agent not in names:
            trace.agents.append(Agent(name=event.agent, role=event.role))
            names.add(event.agent)


def merge_event(stored: Event, incoming: Event) -> Event | None:
    """Apply the identity rules (docs/architecture.md "Domain") to an event re-sent with the same id.

    Returns None when nothing changed (a no-op), the merged event when `incoming` adds
    `t_end` or attributes, and raises TraceValidationError(field=...) when it contradicts
    a stored field (the caller refuses the whole batch: HTTP 409).
    """
    changed = False
    merged = Event(**{**stored.__dict__, "attributes": dict(stored.attributes)})
    for name in (
        "t",
        "type",
        "agent",
        "role",
        "from_",
        "to",
        "tool",
        "content",
        "content_ref",
        "tokens",
        "trusted",
        "t_end",
    ):
        old, new = getattr(stored, name), getattr(incoming, name)
        if new is None or new == old:
            continue
        if old is None:
            setattr(merged, name, new)
            changed = True
            continue
        raise TraceValidationError(
            f"contradicts the stored value {old!r} with {new!r}",
            event_id=stored.id,
            field="from" if name == "from_" else name,
        )
    for key, value in incoming.attributes.items():
        if key in merged.attributes:
            if merged.attributes[key] != value:
                raise TraceValidationError(
                    f"contradicts the stored value {merged.attributes[key]!r} with {value!r}",
                    event_id=stored.id,
                    field=f"attributes.{key}",
                )
            continue
        merged.attributes[key] = value
        changed = True
    return merged if changed else None
