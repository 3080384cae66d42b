"""What an incoming trace fragment changes in a stored trace, or why it is refused.

`plan_batch(stored, fragment)` applies the identity rules (docs/architecture.md "Domain"): a
re-sent equal event is a no-op, one that only adds (`t_end`, attributes) merges
(`model.merge_event`), and one that contradicts what is stored refuses the whole batch. It also
gives the agents a batch creates or fills in (the agent rule, `new_trace_agents` for a new trace),
the edges and labels it adds, and refuses edges naming unknown events. Plain values in and out:
the caller reads what is stored and writes the plan.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from .inputs import refused_text_in
from .model import Agent, Edge, Event, Label, Trace, TraceValidationError, merge_event

#: Agent fields a later batch may fill in where the stored agent has none (attributes are kept).
AGENT_FILL_FIELDS = ("role", "parent", "spawned_at", "despawned_at", "system_prompt")

EdgeKey = tuple[str, str, str]
LabelKey = tuple[str, str, str | None, str | None]


class IngestConflict(Exception):
    """A batch contradicts stored events (HTTP 409); nothing of it is stored.

    `error` is the TraceValidationError naming the event (index in the batch, id, field).
    """

    def __init__(self, error: TraceValidationError):
        self.error = error
        super().__init__(str(error))


@dataclass
class Stored:
    """What is stored of one trace, as far as a fragment needs it (all empty for a new trace).

    `events`: the stored events among the fragment's event ids, by id. `agents`: the stored agents,
    by name, at least those the fragment names (its agents, its events' agents and spawn targets).
    `edges`: stored (src, dst, type), at least those whose src is an edge source of the fragment.
    `event_ids`: the stored ids among its edges' ends. `labels`: every stored label's `label_key`.
    """

    events: dict[str, Event] = field(default_factory=dict)
    agents: dict[str, Agent] = field(default_factory=dict)
    edges: set[EdgeKey] = field(default_factory=set)
    event_ids: set[str] = field(default_factory=set)
    labels: set[LabelKey] = field(default_factory=set)


@dataclass
class BatchPlan:
    """The writes of one batch. `update_events` / `update_agents` are the full merged forms of
    stored rows; every list keeps the fragment's order (labels are not deduplicated in a batch)."""

    insert_events: list[Event] = field(default_factory=list)
    update_events: list[Event] = field(default_factory=list)
    create_agents: list[Agent] = field(default_factory=list)
    update_agents: list[Agent] = field(default_factory=list)
    add_edges: list[Edge] = field(default_factory=list)
    add_labels: list[Label] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """Whether the batch changes nothing (every part of it is already stored)."""
        return not (
            self.insert_events
            or self.update_events
            or self.create_agents
            or self.update_agents
            or self.add_edges
            or self.add_labels
        )

    @property
    def touched_events(self) -> list[Event]:
        """The events the batch writes: inserted, then updated."""
        return self.insert_events + self.update_events


def plan_batch(stored: Stored, fragment: Trace) -> BatchPlan:
    """The writes that store `fragment` into a trace holding `stored`; `fragment` is not changed.

    Raises IngestConflict when an event contradicts a stored one or an earlier one of the batch
    (its error names the event's index in the batch, its id and the field), then
    TraceValidationError(kind="edge", index, field "src"/"dst") when an edge names an event that is
    neither in the batch nor stored.
    """
    inserts, updates = _merge_events(stored.events, fragment.events)
    _check_edge_ends(fragment, stored.event_ids)
    creates, agent_updates = _plan_agents(fragment.agents, list(inserts.values()), stored.agents)
    return BatchPlan(
        insert_events=list(inserts.values()),
        update_events=list(updates.values()),
        create_agents=list(creates.values()),
        update_agents=list(agent_updates.values()),
        add_edges=_new_edges(fragment.edges, stored.edges),
        add_labels=[lb for lb in fragment.labels if label_key(lb) not in stored.labels],
    )


def new_trace_agents(trace: Trace) -> dict[str, Agent]:
    """The agents a new trace stores for `trace` (what `plan_batch` creates from nothing), by name:
    its own (the first of a name), then each agent acting in an event; spawns give parents and
    spawn times."""
    return _plan_agents(trace.agents, trace.events, {})[0]


def label_key(label: Label) -> LabelKey:
    """A label's identity: two labels with the same key are one. The value is compared as canonical
    JSON (sorted keys): PostgreSQL's jsonb gives a stored dict back in its own key order."""
    return (label.key, json.dumps(label.value, sort_keys=True, default=repr), label.event_id, label.agent)


def holds_nul(value: Any) -> bool:
    """Whether a string inside `value` (str, or dicts and lists of them) holds a NUL (U+0000)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(holds_nul(k) or holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_nul(v) for v in value)
    return False


def check_storable(fragment: Trace) -> None:
    """Raise TraceValidationError naming the event, agent, edge or label (kind, index, id, field) or
    the trace field with text no database can store (`model.text_refusal`: a NUL character, which
    PostgreSQL's text and jsonb cannot hold, or a lone surrogate), before any write, on every
    database alike."""
    parts: dict[str, list[Any]] = {
        "event": fragment.events,
        "agent": fragment.agents,
        "edge": fragment.edges,
        "label": fragment.labels,
    }
    for kind, items in parts.items():
        for start in range(0, len(items), _CLEAN_SLICE):
            if _plainly_storable(items[start : start + _CLEAN_SLICE]):
                continue
            _check_items(kind, items, start)
    for name, value in vars(fragment).items():
        if name not in ("events", "agents", "edges", "labels"):
            refusal = refused_text_in(value)
            if refusal is not None:
                raise TraceValidationError(refusal, field=name, kind="trace")


#: Items per JSON encoding in `_plainly_storable` (bounds the text it builds).
_CLEAN_SLICE = 5000


def _plainly_storable(items: list[Any]) -> bool:
    """True when no string in `items` can hold a NUL or a lone surrogate: their JSON text (C-fast)
    has no `\\u0000` escape and encodes as UTF-8. False means "look closer", not "refused" (an
    escaped backslash before `u0000` also matches)."""
    try:
        text = json.dumps([vars(item) for item in items], ensure_ascii=False, default=repr)
        text.encode("utf-8")
    except (TypeError, ValueError):  # UnicodeEncodeError: a lone surrogate; odd keys
        return False
    return "\\u0000" not in text


def _check_items(kind: str, items: list[Any], start: int) -> None:
    """The field-by-field check of `check_storable` on `items[start:]`, up to _CLEAN_SLICE items."""
    for index in range(start, min(len(items), start + _CLEAN_SLICE)):
        item = items[index]
        for name, value in vars(item).items():
            refusal = refused_text_in(value)
            if refusal is not None:
                raise TraceValidationError(
                    refusal,
                    index=index,
                    kind=kind,
                    field=name.rstrip("_"),
                    event_id=item.id if kind == "event" and refused_text_in(item.id) is None else None,
                )


def _merge_events(stored: dict[str, Event], events: list[Event]) -> tuple[dict[str, Event], dict[str, Event]]:
    """Split a batch into new events and merged forms of stored ones, both by id, by the identity
    rules (a later event of the batch with the same id merges into the earlier one)."""
    new: dict[str, Event] = {}
    updates: dict[str, Event] = {}
    for index, event in enumerate(events):
        try:
            if event.id in new:
                merged = merge_event(new[event.id], event)
                if merged is not None:
                    new[event.id] = merged
            elif event.id in updates or event.id in stored:
                merged = merge_event(updates[event.id] if event.id in updates else stored[event.id], event)
                if merged is not None:
                    updates[event.id] = merged
            else:
                new[event.id] = event
        except TraceValidationError as exc:
            raise IngestConflict(
                TraceValidationError(exc.message, index=index, event_id=event.id, field=exc.field)
            ) from None
    return new, updates


def _check_edge_ends(fragment: Trace, stored_ids: set[str]) -> None:
    """Raise TraceValidationError for the first edge naming an event neither in `fragment` nor stored."""
    batch_ids = {e.id for e in fragment.events}
    missing = {i for e in fragment.edges for i in (e.src, e.dst)} - batch_ids - stored_ids
    if not missing:
        return
    index = next(i for i, e in enumerate(fragment.edges) if e.src in missing or e.dst in missing)
    edge = fragment.edges[index]
    name = "src" if edge.src in missing else "dst"
    raise TraceValidationError(f"names unknown event {getattr(edge, name)!r}", index=index, field=name, kind="edge")


def _new_edges(edges: Iterable[Edge], stored: set[EdgeKey]) -> list[Edge]:
    """`edges` not stored, each (src, dst, type) once, in order."""
    seen = set(stored)
    new = []
    for edge in edges:
        key = (edge.src, edge.dst, edge.type)
        if key not in seen:
            seen.add(key)
            new.append(edge)
    return new


def _plan_agents(
    agents: list[Agent], new_events: list[Event], stored: dict[str, Agent]
) -> tuple[dict[str, Agent], dict[str, Agent]]:
    """The agent rule: (agents to create, filled-in forms of stored agents), both by name.

    A fragment agent not stored is created (the first of a name); a stored one gets the fields
    it lacks (AGENT_FILL_FIELDS). Each agent acting in a new event is created when unknown (its
    role from the event). Then `_apply_spawns`. Inputs are not changed (agents are copied).
    """
    creates: dict[str, Agent] = {}
    updates: dict[str, Agent] = {}
    for agent in agents:
        if agent.name not in stored:
            creates.setdefault(agent.name, dataclasses.replace(agent))
            continue
        base = updates.get(agent.name) or stored[agent.name]
        fills = {
            f: getattr(agent, f)
            for f in AGENT_FILL_FIELDS
            if getattr(base, f) is None and getattr(agent, f) is not None
        }
        if fills:
            updates[agent.name] = dataclasses.replace(base, **fills)
    for event in new_events:
        if event.agent not in stored and event.agent not in creates:
            creates[event.agent] = Agent(name=event.agent, role=event.role)
    _apply_spawns(new_events, stored, creates, updates)
    return creates, updates


def _apply_spawns(
    events: Iterable[Event], stored: dict[str, Agent], creates: dict[str, Agent], updates: dict[str, Agent]
) -> None:
    """A `spawn` event of agent A naming B in `to` makes A the parent of B and sets B's spawn time,
    where B does not say otherwise (the Dynamic Dec-POMDP's agent set); in time order. Fills
    `creates` in place and puts changed stored agents, copied, into `updates`."""
    spawns = sorted((e for e in events if e.type == "spawn" and e.to), key=lambda e: e.t)
    for event in spawns:
        name = cast(str, event.to)  # set: filtered above
        if name in stored:
            target = updates.get(name) or stored[name]
        else:
            target = creates.get(name) or creates.setdefault(name, Agent(name=name, role=event.role))
        fills: dict[str, Any] = {}
        if target.parent is None and name != event.agent:
            fills["parent"] = event.agent
        if target.spawned_at is None:
            fills["spawned_at"] = event.t
        if not fills:
            continue
        if name in stored:
            updates[name] = dataclasses.replace(target, **fills)
        else:
            for field_name, value in fills.items():
                setattr(target, field_name, value)
