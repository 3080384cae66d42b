"""Swarmscope's own OTLP export read back as it was written (swarmscope.otlp_export), so that export
then import gives the same trace: its name, system, topology, task, attributes and metrics, the
agents and all their fields, the events (ids, types, times and fields), edges, labels, rewards and
costs; the identity is the OTLP trace's, and `exported_from` keeps the exported one.

The spans of a trace id are such an export when each is one of the exporter's: its root
(`swarmscope.trace.identity_key`), an event span (`swarmscope.event.id` and `swarmscope.event.type`)
or an agent span (`invoke_agent` naming `gen_ai.agent.name`, no event), and one is a root or an event
span. Other traces, and exports that other spans were added to, take the general mapping (build.py).
The rules: docs/otel-mapping.md, "Swarmscope's own export".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from swarmscope.model import Agent, Edge, Event, Label, Trace

from .span import Span, as_int, canonical_order

ROOT = "swarmscope.trace.identity_key"
EVENT = "swarmscope.event"
RESULT = "swarmscope.result_event"


def is_export(spans: list[Span]) -> bool:
    """Whether every span of `spans` is one the exporter writes, and one is its root or an event."""
    seen_own = False
    for span in spans:
        attrs = span.attributes
        if ROOT in attrs or _event_id(attrs, EVENT) is not None:
            seen_own = True
        elif not (attrs.get("gen_ai.operation.name") == "invoke_agent" and isinstance(_agent(attrs), str)):
            return False
    return seen_own


def build_export(spans: list[Span], *, source_format: str, trace_id: str, sources: list[str]) -> Trace:
    """The trace that `spans` (an export: `is_export`) were exported from. Depends on the set of
    spans only (a span id seen twice keeps its earliest-starting record). Raises ValueError when a
    span has no id."""
    unique: dict[str, Span] = {}
    for span in canonical_order(spans):
        if span.span_id is None:
            raise ValueError(f"span {span.name!r} has no span id")
        unique.setdefault(span.span_id, span)
    ordered = list(unique.values())
    root = next((s for s in ordered if ROOT in s.attributes), None)
    t0 = root.start_ns if root is not None else min(s.start_ns for s in ordered)
    agent_of = {s.span_id: _agent(s.attributes) for s in ordered if _event_id(s.attributes, EVENT) is None}
    events: list[tuple[tuple[float, int, str], Event]] = []
    event_span: dict[str, str] = {}  # event id -> its span id
    main: dict[str, str] = {}  # span id -> its event (a folded result's span: the call)
    edges: set[tuple[str, str, str]] = set()
    for span in ordered:
        attrs = span.attributes
        event_id = _event_id(attrs, EVENT)
        if event_id is None or event_id in event_span:
            continue
        agent = _agent(attrs) or agent_of.get(span.parent_id) or "unknown"
        event = _event(span, EVENT, event_id, str(attrs[f"{EVENT}.type"]), agent, t0)
        events.append((_order(attrs, EVENT, event), event))
        event_span[event_id], main[span.sid] = span.sid, event_id
        result_id = _event_id(attrs, RESULT)
        if result_id is not None and result_id not in event_span:
            result = _event(span, RESULT, result_id, "tool_result", agent, t0)
            events.append((_order(attrs, RESULT, result), result))
            event_span[result_id] = span.sid
            edges.add((event_id, result_id, "tool_dependency"))
    for span in ordered:
        own = main.get(span.sid)
        if own is None:
            continue
        for link in span.links:
            edge_type = link.attributes.get("swarmscope.edge.type")
            if link.trace_id != span.trace_id or link.span_id not in main or not isinstance(edge_type, str):
                continue
            # a folded span holds two events: the link names which (exports before `.src`: the call)
            src = _text(link.attributes.get("swarmscope.edge.src"))
            dst = _text(link.attributes.get("swarmscope.edge.dst"))
            src = src if src is not None and event_span.get(src) == link.span_id else main[link.span_id]
            dst = dst if dst is not None and event_span.get(dst) == span.sid else own
            edges.add((src, dst, edge_type))
    events.sort(key=lambda pair: pair[0])
    root_attrs = root.attributes if root is not None else {}
    system = root_attrs.get("swarmscope.trace.system")  # else an export made before it was written
    return Trace(
        source_format=source_format,
        source_id=trace_id,
        name=_name(root),
        system=system if isinstance(system, str) else (root.service if root is not None else None) or "",
        topology=str(root_attrs.get("swarmscope.topology") or "unknown"),
        task_id=_text(root_attrs.get("swarmscope.trace.task_id")) or "",
        agents=_agents(ordered, agent_of, [e for _, e in events]),
        events=[e for _, e in events],
        edges=[Edge(src, dst, kind) for src, dst, kind in sorted(edges)],
        rewards=_numbers(root_attrs, "swarmscope.reward."),
        costs=_numbers(root_attrs, "swarmscope.cost."),
        metrics=_prefixed(root_attrs, "swarmscope.metric.", root_attrs.get("swarmscope.trace.json_metrics")),
        labels=_labels(root_attrs.get("swarmscope.labels")),
        attributes=_trace_attributes(root_attrs, trace_id, sources, len(ordered), t0),
    )


def _event_id(attrs: Mapping[str, Any], prefix: str) -> str | None:
    value = attrs.get(f"{prefix}.id")
    if prefix == EVENT and not isinstance(attrs.get(f"{EVENT}.type"), str):
        return None
    return value if isinstance(value, str) and value else None


def _agent(attrs: Mapping[str, Any]) -> str | None:
    name = attrs.get("gen_ai.agent.name")
    return name if isinstance(name, str) and name else None


def _event(span: Span, prefix: str, event_id: str, event_type: str, agent: str, t0: int) -> Event:
    """The event written under `prefix` on `span`: its own fields where the exporter wrote them
    (`<prefix>.t`, ...), else read from the span (times) and its GenAI attributes."""
    attrs = span.attributes
    t = _seconds(attrs.get(f"{prefix}.t"))
    t_end = _seconds(attrs.get(f"{prefix}.t_end"))
    if t is None:  # an export older than `<prefix>.t`: the span's times
        t = (span.start_ns - t0) / 1e9 if prefix == EVENT else (span.end_ns - t0) / 1e9
        t_end = (span.end_ns - t0) / 1e9 if prefix == EVENT and span.end_ns != span.start_ns else None
    json_names = attrs.get(f"{prefix}.json_attributes")
    if prefix == EVENT:  # the exporter writes these as GenAI attributes (an estimate: its own, `<prefix>.tokens`)
        tool = attrs.get("gen_ai.tool.name")
        tokens = attrs.get("gen_ai.usage.output_tokens", attrs.get(f"{EVENT}.tokens"))
        content = _content(attrs, event_type)
        own_attributes = _prefixed(attrs, "swarmscope.attributes.", json_names)
    else:  # a folded result: the GenAI attributes are its call's, but for the result
        tool, tokens = attrs.get(f"{RESULT}.tool"), attrs.get(f"{RESULT}.tokens")
        content = attrs.get("gen_ai.tool.call.result")
        own_attributes = _prefixed(attrs, f"{RESULT}.attributes.", json_names)
    trusted = attrs.get(f"{prefix}.trusted")
    return Event(
        id=event_id,
        t=max(t, 0.0),
        type=event_type,
        agent=agent,
        t_end=t_end,
        role=_text(attrs.get(f"{prefix}.role")),
        from_=_text(attrs.get(f"{EVENT}.from")) if prefix == EVENT else None,
        to=_text(attrs.get(f"{EVENT}.to")) if prefix == EVENT else None,
        tool=_text(tool),
        content=_text(content),
        content_ref=_text(attrs.get(f"{prefix}.content_ref")),
        tokens=as_int(tokens),
        trusted=trusted if isinstance(trusted, bool) else None,
        attributes=own_attributes,
    )


def _order(attrs: Mapping[str, Any], prefix: str, event: Event) -> tuple[float, int, str]:
    """The event's place in the trace: its position there where written, else by time, then id."""
    index = as_int(attrs.get(f"{prefix}.index"))
    return (-1.0, index, event.id) if index is not None else (event.t, 2**63, event.id)


def _content(attrs: Mapping[str, Any], event_type: str) -> Any:
    """The content as the exporter wrote it: tool arguments or result, else the text of the one
    message in `gen_ai.output.messages`."""
    if event_type == "tool_call":
        return attrs.get("gen_ai.tool.call.arguments")
    if event_type == "tool_result":
        return attrs.get("gen_ai.tool.call.result")
    text = attrs.get("gen_ai.output.messages")
    if not isinstance(text, str):
        return text
    try:
        (message,) = json.loads(text)
        (part,) = message["parts"]
        return part["content"]
    except (ValueError, TypeError, KeyError):  # not the exporter's one message: as given
        return text


def _prefixed(attrs: Mapping[str, Any], prefix: str, json_names: Any) -> dict[str, Any]:
    """The attributes under `prefix`, without it; those that `json_names` (JSON text of a list of
    names) lists were written as JSON text, and are read back as the value they hold."""
    names = _json_value(json_names)
    as_json = set(names) if isinstance(names, list) and all(isinstance(n, str) for n in names) else set()
    own = {}
    for key, value in attrs.items():
        if key.startswith(prefix):
            name = key[len(prefix) :]
            own[name] = _json_value(value) if name in as_json else value
    return own


def _json_value(value: Any) -> Any:
    """The value that JSON text `value` holds; `value` itself when it is no JSON text."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _agents(ordered: list[Span], agent_of: dict[str | None, str | None], events: list[Event]) -> list[Agent]:
    """One agent per agent span, in the order of the trace (`swarmscope.agent.index`), else of the
    spans; then the agents that only events name."""
    agents: dict[str, tuple[int, Agent]] = {}
    for span in ordered:
        name = agent_of.get(span.span_id)
        if name is None or name in agents or ROOT in span.attributes or _event_id(span.attributes, EVENT):
            continue
        index = as_int(span.attributes.get("swarmscope.agent.index"))
        agents[name] = (index if index is not None else 2**63, _agent_of(span, name, agent_of))
    for event in events:
        agents.setdefault(event.agent, (2**64, Agent(name=event.agent)))
    return [agent for _, agent in sorted(agents.values(), key=lambda pair: pair[0])]


def _agent_of(span: Span, name: str, agent_of: dict[str | None, str | None]) -> Agent:
    """The agent of agent span `span`: its fields as the exporter wrote them (`swarmscope.agent.*`);
    its parent, where none is written, the agent of the span it is under (an older export)."""
    attrs = span.attributes
    parent = _text(attrs.get("swarmscope.agent.parent"))
    if parent is None and "swarmscope.agent.index" not in attrs:
        parent = agent_of.get(span.parent_id)
        parent = parent if parent != name else None
    return Agent(
        name=name,
        role=_text(attrs.get("swarmscope.agent.role")),
        parent=parent,
        spawned_at=_seconds(attrs.get("swarmscope.agent.spawned_at")),
        despawned_at=_seconds(attrs.get("swarmscope.agent.despawned_at")),
        system_prompt=_text(attrs.get("swarmscope.agent.system_prompt")),
        attributes=_prefixed(attrs, "swarmscope.agent.attributes.", attrs.get("swarmscope.agent.json_attributes")),
    )


def _name(root: Span | None) -> str:
    """`swarmscope.trace.name`, else the root span's name without `invoke_workflow `."""
    if root is None:
        return ""
    name = root.attributes.get("swarmscope.trace.name")
    return name if isinstance(name, str) else root.name.removeprefix("invoke_workflow ")


def _numbers(attrs: Mapping[str, Any], prefix: str) -> dict[str, float]:
    return {
        key[len(prefix) :]: value
        for key, value in attrs.items()
        if key.startswith(prefix) and isinstance(value, (int, float)) and not isinstance(value, bool)
    }


def _labels(value: Any) -> list[Label]:
    """`swarmscope.labels` (the exporter's list of label objects, or its JSON text); entries that
    are not label objects are skipped."""
    value = _json_value(value)
    labels = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            labels.append(
                Label(
                    key=item["key"],
                    value=item.get("value"),
                    event_id=_text(item.get("event_id")),
                    agent=_text(item.get("agent")),
                    source=_text(item.get("source")),
                )
            )
    return labels


def _trace_attributes(
    root_attrs: Mapping[str, Any], trace_id: str, sources: list[str], spans: int, t0: int
) -> dict[str, Any]:
    """The exported trace's attributes (`swarmscope.trace.attributes.*`) over what the general mapping
    records (trace id, sources, the time origin; the session of an export that wrote no
    `session_id` attribute); `spans`, this import's span count (the store orders builds by it); and
    `exported_from`: the identity key of the trace that was exported."""
    attributes: dict[str, Any] = {"trace_id": trace_id, "sources": sources, "start_time_unix_nano": t0}
    own = _prefixed(root_attrs, "swarmscope.trace.attributes.", root_attrs.get("swarmscope.trace.json_attributes"))
    session = root_attrs.get("gen_ai.conversation.id")
    if isinstance(session, str) and session and "session_id" not in own:
        attributes["conversation_id"] = attributes["session_id"] = session
    attributes.update(own)
    attributes["spans"] = spans
    if isinstance(root_attrs.get(ROOT), str):
        attributes["exported_from"] = root_attrs[ROOT]
    return attributes


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
