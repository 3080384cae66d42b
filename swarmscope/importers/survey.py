"""The survey's minimal replayable orchestration trace: import and export.

Source: the JSON Schema (draft 2020-12) `trace-schema/trace_schema.json` published with
"Reinforcement Learning for LLM-based Multi-Agent Systems through Orchestration Traces"
(arXiv 2605.02801, §9.4). A document is

    {trace_id, task_id, system?, topology?, events: [{id, t, type, agent, role?, from?, to?,
     tool?, content_ref?, trusted?, ...}], edges: [{src, dst, type}], rewards: {channel: number},
     costs: {tokens, wall_clock_s, tool_calls?, messages?}, metrics?: {name: number}}

Events allow extra properties; the trace object does not. So:

- our `delegate` and `stop` events travel as `orchestrator_decision` with `decision: "delegate" |
  "stop"` and come back as `delegate` / `stop`;
- `content`, `t_end`, `tokens` and event attributes travel as extra event properties (an attribute
  whose name is an event field stays nested under `attributes`);

so events and edges round-trip losslessly. Token counts are kept as given, never estimated here
(an estimate would not survive the round trip as "absent"). `export` lists what the trace object
cannot hold.
A file may hold one document or a list of them (JSON Lines).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from swarmscope.model import (
    EVENT_FIELDS,
    Agent,
    Event,
    Trace,
    content_hash,
    edge_from_dict,
    event_from_dict,
)

FORMAT = "survey"

#: The schema's `topology` enum.
TOPOLOGIES = (
    "centralized",
    "planner_executor_critic",
    "debate",
    "swarm",
    "hierarchical",
    "harness",
    "mixed",
    "unknown",
)
#: Our event types that the schema lacks: exported as `orchestrator_decision` + `decision`.
DECISION_TYPES = ("delegate", "stop")
DECISION = "decision"
#: Costs the schema requires; unknown ones are written as 0 and reported.
REQUIRED_COSTS = ("tokens", "wall_clock_s")
UNKNOWN_TASK = "unknown"
#: Event types whose `from` / `to` name agents (spawn's `to` is the child).
_ADDRESSED_TYPES = ("message", "delegate", "return", "aggregate")
#: Event property names an attribute may not take at the top level of an exported event.
_RESERVED = frozenset(EVENT_FIELDS) | {"attributes", DECISION}
_ALPHANUMERIC = re.compile(r"[^\W_]")


def _is_survey(doc: Any) -> bool:
    return (
        isinstance(doc, dict)
        and "trace_id" in doc
        and "format" not in doc
        and isinstance(doc.get("events"), list)
        and all(isinstance(e, dict) for e in doc["events"])
    )


def sniff(doc: Any) -> bool:
    return _is_survey(doc) or (isinstance(doc, list) and bool(doc) and all(_is_survey(d) for d in doc))


def parse(doc: Any, source: str) -> list[Trace]:
    """One trace per survey document (`source_format` "survey").

    Identity: `trace_id`, unless it is a placeholder (see `is_placeholder_id`): then the SHA-256
    of the document, keeping the given id in `attributes["source_trace_id"]`.
    Raises TraceValidationError naming the event or edge index and the field.
    """
    return [_trace(d) for d in (doc if isinstance(doc, list) else [doc])]


def is_placeholder_id(value: Any) -> bool:
    """Whether a trace id is a stand-in, not an identity: missing, a boolean, or without a letter or
    digit ("...", "-")."""
    return value is None or isinstance(value, bool) or not _ALPHANUMERIC.search(str(value))


def _trace(doc: dict[str, Any]) -> Trace:
    events = [event_from_dict(_from_survey_event(raw), index) for index, raw in enumerate(doc["events"])]
    trace_id = doc.get("trace_id")
    attributes: dict[str, Any] = {}
    if is_placeholder_id(trace_id):
        attributes["source_trace_id"] = trace_id
        source_id = content_hash(json.dumps(doc, sort_keys=True, ensure_ascii=False))
        name = ""
    else:
        source_id = name = str(trace_id)
    return Trace(
        source_format=FORMAT,
        source_id=source_id,
        name=name,
        system=doc.get("system") or "",
        topology=doc.get("topology") or "unknown",
        task_id=str(doc.get("task_id") or ""),
        agents=agents_from_events(events),
        events=events,
        edges=[edge_from_dict(e, index) for index, e in enumerate(doc.get("edges") or [])],
        rewards=dict(doc.get("rewards") or {}),
        costs=dict(doc.get("costs") or {}),
        metrics=dict(doc.get("metrics") or {}),
        attributes=attributes,
    )


def _from_survey_event(raw: Any) -> Any:
    """Undo the export mapping: `orchestrator_decision` + `decision: delegate|stop` -> that type."""
    if isinstance(raw, dict) and raw.get("type") == "orchestrator_decision" and raw.get(DECISION) in DECISION_TYPES:
        raw = {key: value for key, value in raw.items() if key != DECISION} | {"type": raw[DECISION]}
    return raw


def agents_from_events(events: list[Event]) -> list[Agent]:
    """The agents a survey trace implies, in order of first mention.

    Actors, spawned children (`spawn`: `agent` is the parent, `to` the child; the child's
    `spawned_at` is the spawn's `t` and its role the spawn's `role` unless its own events give
    one), `despawned_at` from `despawn` (its `to`, else its `agent`), and the agents named by
    `from` / `to` of messages, delegations, returns and aggregates. An actor's role is the `role`
    of its first own event other than a spawn or despawn (whose `role` describes the child).
    """
    agents: dict[str, Agent] = {}
    spawn_roles: dict[str, str] = {}

    def mention(name: str) -> Agent:
        return agents.setdefault(name, Agent(name=name))

    for event in events:
        actor = mention(event.agent)
        if event.type == "spawn":
            if event.to:
                child = mention(event.to)
                if child.parent is None:
                    child.parent, child.spawned_at = event.agent, event.t
                if event.role:
                    spawn_roles.setdefault(event.to, event.role)
        elif event.type == "despawn":
            mention(event.to or event.agent).despawned_at = event.t
        elif actor.role is None:
            actor.role = event.role
        if event.type in _ADDRESSED_TYPES:
            for name in (event.from_, event.to):
                if name:
                    mention(name)
    for name, role in spawn_roles.items():
        if agents[name].role is None:
            agents[name].role = role
    return list(agents.values())


def export(trace: Trace) -> tuple[dict[str, Any], list[str]]:
    """The survey-schema document of `trace`, and what it could not carry.

    Losses are "path: reason" strings (`labels[0]: mistake_agent`, `costs.tokens: unknown,
    written as 0`, `agents.Orchestrator.system_prompt`, ...). Agents count as carried where
    `agents_from_events` on the exported events gives them back unchanged.
    Raises ValueError for a trace without events (the schema needs at least one).
    """
    if not trace.events:
        raise ValueError("the survey schema needs at least one event")
    lost: list[str] = []
    doc: dict[str, Any] = {"trace_id": trace.source_id, "task_id": trace.task_id or UNKNOWN_TASK}
    if not trace.task_id:
        lost.append(f"task_id: none, written as {UNKNOWN_TASK!r}")
    if trace.system:
        doc["system"] = trace.system
    if trace.topology in TOPOLOGIES:
        doc["topology"] = trace.topology
    else:
        doc["topology"] = "unknown"
        lost.append(f"topology: {trace.topology!r} is not in the schema, written as 'unknown'")
    doc["events"] = [_to_survey_event(event) for event in trace.events]
    doc["edges"] = [edge.to_dict() for edge in trace.edges]
    doc["rewards"] = _numbers(trace.rewards, "rewards", lost)
    costs = _numbers(trace.costs, "costs", lost)
    for key in REQUIRED_COSTS:
        if key not in costs:
            costs[key] = 0
            lost.append(f"costs.{key}: unknown, written as 0")
    doc["costs"] = costs
    metrics = _numbers(trace.metrics, "metrics", lost)
    if metrics:
        doc["metrics"] = metrics
    if trace.source_format != FORMAT:
        lost.append(f"source_format: {trace.source_format}")
    if trace.name and trace.name != trace.source_id:
        lost.append("name")
    lost.extend(f"attributes.{key}" for key in trace.attributes)
    lost.extend(f"labels[{index}]: {label.key}" for index, label in enumerate(trace.labels))
    lost.extend(_agent_losses(trace))
    return doc, lost


def _to_survey_event(event: Event) -> dict[str, Any]:
    data = event.to_dict()
    attributes = data.pop("attributes", {})
    data.update({key: value for key, value in attributes.items() if key not in _RESERVED})
    nested = {key: value for key, value in attributes.items() if key in _RESERVED}
    if nested:
        data["attributes"] = nested
    if event.type in DECISION_TYPES:
        data["type"], data[DECISION] = "orchestrator_decision", event.type
    return data


def _numbers(values: dict[str, Any], path: str, lost: list[str]) -> dict[str, float]:
    """The finite numeric entries of `values`; the others are reported in `lost`."""
    kept = {}
    for key, value in values.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            kept[key] = value
        else:
            lost.append(f"{path}.{key}: not a number")
    return kept


def _agent_losses(trace: Trace) -> list[str]:
    implied = {agent.name: agent for agent in agents_from_events(trace.events)}
    lost = []
    for agent in trace.agents:
        carried = implied.get(agent.name)
        if carried is None:
            lost.append(f"agents.{agent.name}: no events")
            continue
        for name in ("role", "parent", "spawned_at", "despawned_at", "system_prompt"):
            value = getattr(agent, name)
            if value is not None and value != getattr(carried, name):
                lost.append(f"agents.{agent.name}.{name}")
        if agent.attributes:
            lost.append(f"agents.{agent.name}.attributes")
    return lost
