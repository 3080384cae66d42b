"""Any trace as OTLP/JSON with the OpenTelemetry GenAI conventions, for the tools users already run
(Phoenix, Langfuse, Jaeger, an OpenTelemetry Collector).

Shape (OTLP/JSON `ExportTraceServiceRequest`, opentelemetry-proto `trace/v1/trace.proto`): one
resource (`service.name` = the trace's system) and one scope, holding

- a root span `invoke_workflow <name>` (gen_ai.operation.name `invoke_workflow`) over the whole trace,
  with the trace's own fields (`swarmscope.trace.name`, `.system`, `.task_id`, `swarmscope.topology`,
  its attributes as `swarmscope.trace.attributes.*`, its metrics as `swarmscope.metric.*`);
- one `invoke_agent <agent>` span per agent (gen_ai.agent.name), child of the span of the agent that
  spawned it (`Agent.parent`), else of the root, from its first to its last event, with the agent's
  fields (`swarmscope.agent.index`, `.role`, `.parent`, ..., `swarmscope.agent.attributes.*`);
- one span per event, child of its agent's span: `chat` for messages and decisions (content in
  `gen_ai.output.messages`), `execute_tool <tool>` for a tool call, its result (the `tool_result`
  its `tool_dependency` edge names) folded into the same span as `gen_ai.tool.call.result`,
  `create_agent` for spawns, `invoke_agent` for delegations (with `gen_ai.transfer.target.name`);
  every span also carries `swarmscope.event.id`, `swarmscope.event.type`, the fields no GenAI
  attribute holds (`swarmscope.event.t`, `.t_end`, `.index`, `.role`, ...) and the event's own
  attributes (`swarmscope.attributes.*`; a folded result: `swarmscope.result_event.*`); an event's
  measured tokens as `gen_ai.usage.output_tokens`, an estimate as `swarmscope.event.tokens` (a
  backend would count GenAI usage as measured: docs/metrics.md "Tokens");
- the trace's edges as span links on the destination event's span (`swarmscope.edge.type`, `.src`,
  `.dst`: event ids, since a folded span holds two events).

Attribute and metric values that are no OTLP scalar (objects, lists, null) are JSON text, listed by
name in `<prefix>.json_attributes` (`swarmscope.trace.json_metrics`). Swarmscope's OTLP import reads
all of this back (swarmscope.importers.otel.exported): export, then import, gives the same trace,
every field with its value types, under the OTLP trace's identity (docs/otel-mapping.md).

Times: `origin_ns`, else when the trace began by its attributes (`origin_ns(trace)`), else 1 s
after the Unix epoch (OTLP reads 0 as "unset"), plus event `t` seconds.
Ids are derived from the trace's identity key (sha256), so exporting twice gives the same ids.
`extra` adds resource attributes (a branch trace's parent, attributions); `span_events` maps an
event id to extra span events (e.g. `swarmscope.attribution` with its estimate and interval).
Conventions: https://opentelemetry.io/docs/specs/semconv/gen-ai/ (GenAI spans and agent spans).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from .importers.otel_sdk import iso_ns
from .model import Agent, Edge, Event, Trace
from .tokens import is_estimated

#: Event types exported as `chat` spans (an LLM turn's output); the others have their own operation.
OPERATIONS = {
    "tool_call": "execute_tool",
    "tool_result": "execute_tool",
    "spawn": "create_agent",
    "delegate": "invoke_agent",
}
SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"


@dataclass
class SpanPlan:
    """What the spans of a trace need besides its events in order, found by whoever holds the trace
    (`plan_of` for one in memory; the web app asks its database): `end`, the latest event end (its
    `t_end`, else `t`; seconds, 0.0 without events); `windows`, agent -> (earliest, latest) of its
    events' `t` and end; `event_agents`, the agents of events in order of first appearance;
    `folded`, tool_result id -> id of the tool_call whose span holds it (`fold_tool_results`)."""

    end: float
    windows: dict[str, tuple[float, float]]
    event_agents: list[str]
    folded: dict[str, str]


@dataclass
class PageContext:
    """What the spans of one page of events need from the rest of the trace: `results`, folded
    tool_result id -> (its index in the trace, the event) for the page's tool calls; `edges`, in
    trace order, every edge whose `dst` is a page event or one of those results; `known`, which of
    those edges' `src` are events of the trace."""

    results: dict[str, tuple[int, Event]]
    edges: list[Edge]
    known: set[str]


class SpanSource(Protocol):
    """A trace's events read a page at a time (e.g. from a database), for `iter_otlp_json`:
    `pages()` yields lists of (index in the trace, event) in trace order, and `context(page, results)`
    the `PageContext` of a page whose tool calls fold the tool_result ids `results`."""

    plan: SpanPlan

    def pages(self) -> Iterable[list[tuple[int, Event]]]: ...

    def context(self, page: list[tuple[int, Event]], results: list[str]) -> PageContext: ...


def to_otlp_json(
    trace: Trace,
    *,
    extra: Mapping[str, Any] | None = None,
    span_events: Mapping[str, list[tuple[str, Mapping[str, Any]]]] | None = None,
    origin_ns: int | None = None,
) -> dict[str, Any]:
    """The OTLP/JSON document of `trace` (see the module docstring for the mapping).

    `extra`: resource attributes added as given (str, bool, int, float, or anything JSON, written
    as a JSON string). `span_events`: event id -> [(event name, attributes)], attached to that
    event's span at the event's time. Raises nothing for a valid trace (empty traces export a
    lone root span).
    """
    spans = list(_spans(trace, MemorySource(trace), span_events, origin_ns))
    resource, scope = _resource(trace, extra), {"name": "swarmscope", "version": "1"}
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": resource},
                "scopeSpans": [{"scope": scope, "spans": spans}],
                "schemaUrl": SCHEMA_URL,
            }
        ]
    }


def iter_otlp_json(
    trace: Trace,
    *,
    extra: Mapping[str, Any] | None = None,
    span_events: Mapping[str, list[tuple[str, Mapping[str, Any]]]] | None = None,
    origin_ns: int | None = None,
    chunk_chars: int = 64 * 1024,
    source: SpanSource | None = None,
) -> Iterator[str]:
    """`json.dumps(to_otlp_json(...), ensure_ascii=False)`, the same text, as chunks of about
    `chunk_chars` characters made one span at a time: what it holds besides `trace` is one chunk,
    not the document (a generator, for a streamed download). With `source`, the events and edges
    come from it a page at a time and `trace` gives only the rest (fields, agents, labels): then it
    holds one page of events and the source's plan, whatever the trace's length."""
    resource = json.dumps({"attributes": _resource(trace, extra)}, ensure_ascii=False)
    scope = json.dumps({"name": "swarmscope", "version": "1"})
    buffer = [f'{{"resourceSpans": [{{"resource": {resource}, "scopeSpans": [{{"scope": {scope}, "spans": [']
    size, first = len(buffer[0]), True
    for span in _spans(trace, source or MemorySource(trace), span_events, origin_ns):
        text = json.dumps(span, ensure_ascii=False)
        buffer.append(text if first else ", " + text)
        size += len(buffer[-1])
        first = False
        if size >= chunk_chars:
            yield "".join(buffer)
            buffer, size = [], 0
    buffer.append(f']}}], "schemaUrl": {json.dumps(SCHEMA_URL)}}}]}}')
    yield "".join(buffer)


class MemorySource:
    """The `SpanSource` of a trace held whole: one page, its plan from `plan_of`."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.plan = plan_of(trace)

    def pages(self) -> Iterable[list[tuple[int, Event]]]:
        return [list(enumerate(self.trace.events))]

    def context(self, page: list[tuple[int, Event]], results: list[str]) -> PageContext:
        index = {e.id: (i, e) for i, e in enumerate(self.trace.events)}
        wanted = {e.id for _, e in page} | set(results)
        return PageContext(
            results={r: index[r] for r in results},
            edges=[edge for edge in self.trace.edges if edge.dst in wanted],
            known=set(index),
        )


def plan_of(trace: Trace) -> SpanPlan:
    """The `SpanPlan` of a trace held whole."""
    windows: dict[str, tuple[float, float]] = {}
    agents: dict[str, None] = {}
    end: float | None = None
    for event in trace.events:
        last = event.t_end if event.t_end is not None else event.t
        low, high = windows.get(event.agent, (min(event.t, last), max(event.t, last)))
        windows[event.agent] = (min(low, event.t, last), max(high, event.t, last))
        agents.setdefault(event.agent)
        end = last if end is None else max(end, last)
    kinds = {e.id: (e.type, e.agent) for e in trace.events}
    return SpanPlan(
        end=0.0 if end is None else end,
        windows=windows,
        event_agents=list(agents),
        folded=fold_tool_results(trace.edges, kinds),
    )


def fold_tool_results(edges: Iterable[Edge], kinds: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """tool_result id -> id of the tool_call it answers, whose span holds it: its `tool_dependency`
    edge (in trace order, the first of each call and of each result), both events of one agent.
    `kinds`: event id -> (type, agent) of at least the events such edges name."""
    folded: dict[str, str] = {}
    calls_used: set[str] = set()
    for edge in edges:
        call, result = kinds.get(edge.src), kinds.get(edge.dst)
        if (
            edge.type == "tool_dependency"
            and call is not None
            and result is not None
            and call[0] == "tool_call"
            and result[0] == "tool_result"
            and call[1] == result[1]
            and edge.src not in calls_used
            and edge.dst not in folded
        ):
            folded[edge.dst] = edge.src
            calls_used.add(edge.src)
    return folded


def _spans(
    trace: Trace,
    source: SpanSource,
    span_events: Mapping[str, list[tuple[str, Mapping[str, Any]]]] | None,
    origin_ns: int | None,
) -> Iterator[dict[str, Any]]:
    """The spans of `trace`'s document, one at a time: root, agents, then events in trace order
    (the events, edges and plan from `source`; the rest from `trace`)."""
    key = trace.identity_key
    trace_id = _hex(key, 32)
    origin = origin_ns if origin_ns is not None else _origin_ns(trace)
    plan = source.plan

    def ns(seconds: float | None) -> str:
        return str(origin + round((seconds or 0.0) * 1e9))

    root_id = _hex(f"{key}\x00root", 16)
    yield _span(
        trace_id,
        root_id,
        None,
        f"invoke_workflow {trace.name or trace.source_id}"[:200],
        ns(0.0),
        ns(plan.end),
        {
            "gen_ai.operation.name": "invoke_workflow",
            "swarmscope.trace.identity_key": key,
            "swarmscope.trace.name": trace.name,
            "swarmscope.trace.system": trace.system,
            "swarmscope.topology": trace.topology,
            "swarmscope.trace.task_id": trace.task_id or None,
            **_values(trace.attributes, "swarmscope.trace.attributes.", "swarmscope.trace.json_attributes"),
            **_values(trace.metrics, "swarmscope.metric.", "swarmscope.trace.json_metrics"),
        },
    )
    names = list(dict.fromkeys([a.name for a in trace.agents] + plan.event_agents))
    agent_span = {name: _hex(f"{key}\x00agent\x00{name}", 16) for name in names}
    parents = {a.name: a.parent for a in trace.agents}
    declared = {a.name: (i, a) for i, a in enumerate(trace.agents)}
    for name, span_id in agent_span.items():
        parent = parents.get(name)
        low, high = plan.windows.get(name, (0.0, 0.0))
        yield _span(
            trace_id,
            span_id,
            agent_span.get(parent, root_id) if parent and parent != name else root_id,
            f"invoke_agent {name}",
            ns(low),
            ns(high),
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": name,
                **(_agent_attributes(*declared[name]) if name in declared else {}),
            },
        )
    call_of = plan.folded  # a folded result's span is its call's
    result_of = {call: result for result, call in call_of.items()}

    def span_of(event_id: str) -> str:
        return _hex(f"{key}\x00event\x00{call_of.get(event_id, event_id)}", 16)

    for page in source.pages():
        wanted = [result_of[e.id] for _, e in page if e.id in result_of]
        context = source.context(page, wanted)
        links: dict[str, list[dict[str, Any]]] = {}
        for edge in context.edges:
            if edge.src in context.known and span_of(edge.src) != span_of(edge.dst):
                links.setdefault(edge.dst, []).append(
                    {
                        "traceId": trace_id,
                        "spanId": span_of(edge.src),
                        "attributes": _attributes(
                            {
                                "swarmscope.edge.type": edge.type,
                                "swarmscope.edge.src": edge.src,
                                "swarmscope.edge.dst": edge.dst,
                            }
                        ),
                    }
                )
        for index, event in page:
            if event.id in call_of:
                continue
            attrs = _event_attributes(event, index)
            last = event
            if event.id in result_of:
                last_index, last = context.results[result_of[event.id]]
                attrs.update(_result_attributes(last, last_index))
            span = _span(
                trace_id,
                span_of(event.id),
                agent_span[event.agent],
                _event_span_name(event),
                ns(event.t),
                ns(
                    max(
                        event.t_end if event.t_end is not None else event.t,
                        last.t_end if last.t_end is not None else last.t,
                    )
                ),
                attrs,
            )
            span_links = links.get(event.id, []) + (links.get(last.id, []) if last is not event else [])
            if span_links:
                span["links"] = span_links
            if span_events and event.id in span_events:
                span["events"] = [
                    {"timeUnixNano": ns(event.t), "name": name, "attributes": _attributes(attrs)}
                    for name, attrs in span_events[event.id]
                ]
            yield span


def _resource(trace: Trace, extra: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The resource's attributes (OTLP key-value list): the trace's system, source, rewards, costs,
    labels, `extra`, its session id."""
    resource = {
        "service.name": trace.system or "swarmscope",
        "swarmscope.source_format": trace.source_format,
        "swarmscope.source_id": trace.source_id,
        **{f"swarmscope.reward.{k}": v for k, v in trace.rewards.items()},
        **{f"swarmscope.cost.{k}": v for k, v in trace.costs.items()},
        **({"swarmscope.labels": [lb.to_dict() for lb in trace.labels]} if trace.labels else {}),
        **(dict(extra) if extra else {}),
    }
    if trace.attributes.get("session_id"):
        resource["gen_ai.conversation.id"] = str(trace.attributes["session_id"])
    return _attributes(resource)


def _event_span_name(event: Event) -> str:
    operation = OPERATIONS.get(event.type, "chat")
    if operation == "execute_tool":
        return f"execute_tool {event.tool or 'tool'}"
    if operation == "invoke_agent":
        return f"invoke_agent {event.to or 'agent'}"
    return operation


def _agent_attributes(index: int, agent: Agent) -> dict[str, Any]:
    """The agent's fields, for the importer to read back exactly: its position among the trace's
    agents, role, parent (also the span's parent), spawn and despawn times (seconds), system prompt
    and attributes (`swarmscope.agent.attributes.*`)."""
    return {
        "swarmscope.agent.index": index,
        "swarmscope.agent.role": agent.role,
        "swarmscope.agent.parent": agent.parent,
        "swarmscope.agent.spawned_at": agent.spawned_at,
        "swarmscope.agent.despawned_at": agent.despawned_at,
        "swarmscope.agent.system_prompt": agent.system_prompt,
        **_values(agent.attributes, "swarmscope.agent.attributes.", "swarmscope.agent.json_attributes"),
    }


def _own_fields(event: Event, index: int, prefix: str) -> dict[str, Any]:
    """The event's fields that no GenAI attribute carries, for the importer to read back exactly:
    `t` / `t_end` (seconds, as in the trace), its position in the trace, role, content_ref, trusted."""
    return {
        f"{prefix}.t": event.t,
        f"{prefix}.t_end": event.t_end,
        f"{prefix}.index": index,
        f"{prefix}.role": event.role,
        f"{prefix}.content_ref": event.content_ref,
        f"{prefix}.trusted": event.trusted,
    }


def _result_attributes(result: Event, index: int) -> dict[str, Any]:
    """A tool result folded into its call's span: its id and its own fields (`swarmscope.result_event.*`)."""
    attrs: dict[str, Any] = {
        "swarmscope.result_event.id": result.id,
        **_own_fields(result, index, "swarmscope.result_event"),
        "swarmscope.result_event.tool": result.tool,
        "swarmscope.result_event.tokens": result.tokens,
        "gen_ai.tool.call.result": result.content,
    }
    attrs.update(
        _values(result.attributes, "swarmscope.result_event.attributes.", "swarmscope.result_event.json_attributes")
    )
    return attrs


def _values(values: Mapping[str, Any], key_prefix: str, json_key: str) -> dict[str, Any]:
    """`values` (an event's, agent's or trace's attributes, the trace's metrics) under `key_prefix`;
    a value that is no OTLP scalar (None, a list, an object) is written as JSON text, and `json_key`
    lists their names (as JSON text) so that the importer tells them from text that only looks like
    JSON."""
    attrs: dict[str, Any] = {}
    as_json = []
    for name, value in values.items():
        if not _is_scalar(value):
            value = json.dumps(value, ensure_ascii=False, default=str)
            as_json.append(name)
        attrs[f"{key_prefix}{name}"] = value
    if as_json:
        attrs[json_key] = json.dumps(as_json, ensure_ascii=False)
    return attrs


def _is_scalar(value: Any) -> bool:
    """Whether `_any_value` writes `value` as itself (not as JSON text)."""
    if isinstance(value, bool) or isinstance(value, str):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return isinstance(value, float) and math.isfinite(value)


def _event_attributes(event: Event, index: int) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": OPERATIONS.get(event.type, "chat"),
        "gen_ai.agent.name": event.agent,
        "swarmscope.event.id": event.id,
        "swarmscope.event.type": event.type,
        **_own_fields(event, index, "swarmscope.event"),
    }
    if event.tool:
        attrs["gen_ai.tool.name"] = event.tool
    if event.to:
        attrs["swarmscope.event.to"] = event.to
        if event.type == "delegate":
            attrs["gen_ai.transfer.target.name"] = event.to
    if event.from_:
        attrs["swarmscope.event.from"] = event.from_
    if event.content is not None:
        if event.type == "tool_call":
            attrs["gen_ai.tool.call.arguments"] = event.content
        elif event.type == "tool_result":
            attrs["gen_ai.tool.call.result"] = event.content
        else:
            role = "assistant" if event.role in (None, "assistant") else event.role
            attrs["gen_ai.output.messages"] = json.dumps(
                [{"role": role, "parts": [{"type": "text", "content": event.content}]}], ensure_ascii=False
            )
    if event.tokens is not None:  # an importer's estimate is no usage: a backend would count it
        attrs["swarmscope.event.tokens" if is_estimated(event) else "gen_ai.usage.output_tokens"] = event.tokens
    for key, value in _values(event.attributes, "swarmscope.attributes.", "swarmscope.event.json_attributes").items():
        attrs.setdefault(key, value)
    return attrs


def _span(
    trace_id: str, span_id: str, parent: str | None, name: str, start: str, end: str, attrs: dict[str, Any]
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": 1,  # SPAN_KIND_INTERNAL
        "startTimeUnixNano": start,
        "endTimeUnixNano": end,
        "attributes": _attributes(attrs),
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def _attributes(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any_value(v)} for k, v in values.items() if v is not None]


def _any_value(value: Any) -> dict[str, Any]:
    """An OTLP AnyValue: scalars as themselves (int64 as a decimal string, as OTLP/JSON writes it),
    anything else as its JSON text."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int) and -(2**63) <= value < 2**63:
        return {"intValue": str(value)}
    if isinstance(value, float) and math.isfinite(value):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"stringValue": json.dumps(value, ensure_ascii=False, default=str)}


def origin_ns(trace: Trace) -> int | None:
    """When the trace began, in ns since the Unix epoch, as its importer recorded it:
    `start_time_unix_nano` (OTel formats), else an ISO 8601 `start_time` / `started_at` (Claude Code,
    Codex, Langfuse); None when it recorded none."""
    started = trace.attributes.get("start_time_unix_nano")
    if isinstance(started, int) and not isinstance(started, bool) and started > 0:
        return started
    for key in ("start_time", "started_at"):
        text = trace.attributes.get(key)
        if isinstance(text, str):
            try:
                return iso_ns(text)
            except ValueError:
                continue
    return None


def _origin_ns(trace: Trace) -> int:
    return origin_ns(trace) or 1_000_000_000


def _hex(text: str, width: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:width]
