"""All writes to stored traces, and the reads the live protocol and exports need.

`do_ingest` is the one write path: an import, an API batch and an OTLP request all end here.
It applies DESIGN.md's identity rules (a re-sent event is a no-op, an event that adds `t_end` or
attributes merges, a contradicting one refuses the whole batch), writes in one transaction with
bulk inserts, gives the batch the trace's next sequence number, and broadcasts one delta after
commit (webapp.web.broadcast).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterable

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from psycopg.types.json import Jsonb

from swarmscope import model as core
from swarmscope.importers import SourceFile, read_files
from swarmscope.importers.spans import Span
from swarmscope.metrics import compute_metrics
from swarmscope.redaction import compiled, redact_trace, redact_value
from webapp.accounts.models import Project
from webapp.web.broadcast import broadcast_trace_delta, broadcast_trace_reset
from webapp.web.jobs import enqueue

from .models import Agent, Edge, Event, Label, StoredSpan, Trace

logger = logging.getLogger(__name__)

#: SQLite allows 32,766 bound variables; stay far below for `IN (...)` look-ups.
LOOKUP_CHUNK = 900
BULK_BATCH = 1000
SUMMARY_LABELS = ("mistake_agent", "mistake_step", "failure_mode")


class IngestConflict(Exception):
    """A batch contradicts stored events (HTTP 409); nothing of it was stored."""

    def __init__(self, error: core.TraceValidationError):
        self.error = error
        super().__init__(str(error))


@dataclass
class IngestResult:
    trace: Trace
    created: bool
    seq: int
    events_added: int
    events_updated: int
    rejected: int = 0  # OTLP spans refused (an id already stored with other content)

    @property
    def changed(self) -> bool:
        return self.created or self.events_added > 0 or self.events_updated > 0


# --- wire form ---------------------------------------------------------------------------------

_EVENT_COLUMNS = ("event_id", "t", "t_end", "type", "agent", "role", "from_agent", "to", "tool",
                  "content", "content_ref", "tokens", "trusted", "attributes", "seq")


def _event_wire(row: dict[str, Any]) -> dict[str, Any]:
    wire = {"id": row["event_id"], "t": row["t"], "type": row["type"], "agent": row["agent"], "seq": row["seq"]}
    for column, name in (("t_end", "t_end"), ("role", "role"), ("from_agent", "from"), ("to", "to"),
                         ("tool", "tool"), ("content", "content"), ("content_ref", "content_ref"),
                         ("tokens", "tokens"), ("trusted", "trusted")):
        if row[column] is not None:
            wire[name] = row[column]
    if row["attributes"]:
        wire["attributes"] = row["attributes"]
    return wire


_AGENT_COLUMNS = ("name", "role", "parent", "spawned_at", "despawned_at", "system_prompt", "attributes")


def _label_wire(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("key", "value", "event_id", "agent", "source", "seq") if row[k] is not None}


def _event_row_to_core(row: dict[str, Any]) -> core.Event:
    return core.Event(id=row["event_id"], t=row["t"], t_end=row["t_end"], type=row["type"], agent=row["agent"],
                      role=row["role"], from_=row["from_agent"], to=row["to"], tool=row["tool"],
                      content=row["content"], content_ref=row["content_ref"], tokens=row["tokens"],
                      trusted=row["trusted"], attributes=row["attributes"] or {})


def _core_event_columns(event: core.Event) -> dict[str, Any]:
    return {"event_id": event.id, "t": event.t, "t_end": event.t_end, "type": event.type, "agent": event.agent,
            "role": event.role, "from_agent": event.from_, "to": event.to, "tool": event.tool,
            "content": event.content, "content_ref": event.content_ref, "tokens": event.tokens,
            "trusted": event.trusted, "attributes": event.attributes}


def trace_summary(trace: Trace) -> dict[str, Any]:
    """The trace-level part of a snapshot and of the API's trace resource."""
    return {
        "id": trace.pk,
        "project": trace.project_id,
        "identity_key": trace.identity_key,
        "name": trace.name,
        "system": trace.system,
        "source_format": trace.source_format,
        "source_id": trace.source_id,
        "topology": trace.topology,
        "task_id": trace.task_id,
        "attributes": trace.attributes,
        "rewards": trace.rewards,
        "costs": trace.costs,
        "metrics": trace.metrics,
        "seq": trace.seq,
        "event_count": trace.event_count,
        "agent_count": trace.agent_count,
        "total_tokens": trace.total_tokens,
        "duration_s": trace.duration_s,
        "reward": trace.reward,
        "labels": trace.label_summary,
        "live": is_live(trace),
        "created_at": trace.created_at.isoformat() if trace.created_at else None,
    }


LIVE_WINDOW_S = 30


def is_live(trace: Trace) -> bool:
    """A trace is live while events arrived through the API in the last LIVE_WINDOW_S seconds."""
    return bool(trace.last_event_at and (timezone.now() - trace.last_event_at).total_seconds() < LIVE_WINDOW_S)


def _collections_since(trace: Trace, after_seq: int, upto_seq: int) -> dict[str, list[dict[str, Any]]]:
    # Bounded above too: under READ COMMITTED (PostgreSQL) a batch committed after the trace row was
    # read would otherwise ride along under the older seq, and its own delta would deliver it again.
    def rows(model, columns, order):
        return (model.objects.filter(trace=trace, seq__gt=after_seq, seq__lte=upto_seq)
                .order_by(*order).values(*columns))

    return {
        "agents": list(rows(Agent, _AGENT_COLUMNS + ("seq",), ("id",))),
        "events": [_event_wire(r) for r in rows(Event, _EVENT_COLUMNS, ("position",))],
        "edges": list(rows(Edge, ("src", "dst", "type", "seq"), ("id",))),
        "labels": [_label_wire(r) for r in rows(Label, ("key", "value", "event_id", "agent", "source", "seq"),
                                                ("id",))],
    }


def get_snapshot(trace: Trace, *, with_metrics: bool = True) -> dict[str, Any]:
    """The live protocol's snapshot (swarmscope.protocol) of `trace` as of its current seq."""
    with transaction.atomic():
        trace = Trace.objects.get(pk=trace.pk)
        collections = _collections_since(trace, -1, trace.seq)
    summary = trace_summary(trace)
    if with_metrics:
        summary["computed_metrics"] = get_computed_metrics(trace)
    return {"type": "snapshot", "seq": trace.seq, "trace": summary, **collections}


def get_delta_since(trace: Trace, seq: int) -> dict[str, Any]:
    """One delta holding every row written after `seq` (the answer to a resume).

    When the trace was rebuilt after `seq` (see `do_ingest_spans`) a delta cannot express the
    change, and the answer is a fresh snapshot instead.
    """
    with transaction.atomic():
        current, reset_seq = Trace.objects.values_list("seq", "reset_seq").get(pk=trace.pk)
        if reset_seq > seq:
            return get_snapshot(trace)
        collections = _collections_since(trace, seq, current)
    return {"type": "delta", "seq": current, **collections}


def to_core_trace(trace: Trace) -> core.Trace:
    """The stored trace as a swarmscope Trace (for metrics and exports)."""
    result = core.Trace(source_format=trace.source_format, source_id=trace.source_id, name=trace.name,
                        system=trace.system, topology=trace.topology, task_id=trace.task_id,
                        rewards=dict(trace.rewards), costs=dict(trace.costs), metrics=dict(trace.metrics),
                        attributes=dict(trace.attributes))
    result.agents = [core.Agent(name=a["name"], role=a["role"], parent=a["parent"], spawned_at=a["spawned_at"],
                                despawned_at=a["despawned_at"], system_prompt=a["system_prompt"],
                                attributes=a["attributes"] or {})
                     for a in trace.agents.order_by("id").values()]
    result.events = [_event_row_to_core(r) for r in trace.events.order_by("position").values(*_EVENT_COLUMNS)]
    result.edges = [core.Edge(src=e["src"], dst=e["dst"], type=e["type"])
                    for e in trace.edges.order_by("id").values("src", "dst", "type")]
    result.labels = [core.Label(key=lb["key"], value=lb["value"], event_id=lb["event_id"], agent=lb["agent"],
                                source=lb["source"])
                     for lb in trace.labels.order_by("id").values()]
    return result


def get_computed_metrics(trace: Trace) -> dict[str, Any]:
    """Metrics of swarmscope.metrics for the trace's current seq, cached on the row."""
    if trace.computed_metrics_seq == trace.seq and trace.computed_metrics:
        return trace.computed_metrics
    metrics = compute_metrics(to_core_trace(trace)) if trace.event_count else {}
    Trace.objects.filter(pk=trace.pk).update(computed_metrics=metrics, computed_metrics_seq=trace.seq)
    trace.computed_metrics, trace.computed_metrics_seq = metrics, trace.seq
    return metrics


# --- the write path ----------------------------------------------------------------------------

def _in_chunks(values: Iterable[str]):
    """`values`, deduplicated, in lists short enough for an `IN (...)` look-up."""
    values = list(set(values))
    for start in range(0, len(values), LOOKUP_CHUNK):
        yield values[start:start + LOOKUP_CHUNK]


def _existing_events(trace: Trace, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    return {row["event_id"]: row for chunk in _in_chunks(ids)
            for row in trace.events.filter(event_id__in=chunk).values("id", *_EVENT_COLUMNS)}


def _stored_agents(trace: Trace, names: Iterable[str]) -> dict[str, Agent]:
    """The stored agents among `names` (only those: a long live trace has many)."""
    return {a.name: a for chunk in _in_chunks(names) for a in trace.agents.filter(name__in=chunk)}


def _stored_edges(trace: Trace, edges: list[core.Edge]) -> set[tuple[str, str, str]]:
    """The stored (src, dst, type) among `edges`, looked up by their sources."""
    found: set[tuple[str, str, str]] = set()
    for chunk in _in_chunks(e.src for e in edges):
        found.update(trace.edges.filter(src__in=chunk).values_list("src", "dst", "type"))
    return found


def _known_event_ids(trace: Trace, ids: Iterable[str]) -> set[str]:
    return {i for chunk in _in_chunks(ids) for i in trace.events.filter(event_id__in=chunk)
            .values_list("event_id", flat=True)}


def _merge_batch(trace: Trace | None, events: list[core.Event]):
    """Split a batch into new events and merged updates, applying the identity rules.

    Returns (new: dict id -> Event, updates: dict id -> (row pk, Event)). Raises IngestConflict.
    """
    new: dict[str, core.Event] = {}
    updates: dict[str, tuple[int, core.Event]] = {}
    stored = _existing_events(trace, [e.id for e in events]) if trace is not None else {}
    for index, event in enumerate(events):
        try:
            if event.id in new:
                merged = core.merge_event(new[event.id], event)
                if merged is not None:
                    new[event.id] = merged
            elif event.id in updates or event.id in stored:
                pk, base = updates.get(event.id) or (stored[event.id]["id"], _event_row_to_core(stored[event.id]))
                merged = core.merge_event(base, event)
                if merged is not None:
                    updates[event.id] = (pk, merged)
            else:
                new[event.id] = event
        except core.TraceValidationError as exc:
            raise IngestConflict(core.TraceValidationError(exc.message, index=index, event_id=event.id,
                                                            field=exc.field)) from None
    return new, updates


def _find_or_create_trace(project: Project, fragment: core.Trace, trace: Trace | None) -> tuple[Trace, bool]:
    if trace is not None:
        return Trace.objects.select_for_update().get(pk=trace.pk), False
    found = Trace.objects.select_for_update().filter(project=project, identity_key=fragment.identity_key).first()
    if found is not None:
        return found, False
    return Trace.objects.create(
        project=project, identity_key=fragment.identity_key, source_format=fragment.source_format,
        source_id=fragment.source_id, name=fragment.name or fragment.source_id[:200], system=fragment.system,
        topology=fragment.topology, task_id=fragment.task_id, attributes=fragment.attributes,
        rewards=fragment.rewards, costs=fragment.costs, metrics=fragment.metrics,
    ), True


def _label_key(label: dict[str, Any]) -> tuple:
    return (label["key"], repr(label["value"]), label.get("event_id"), label.get("agent"))


def holds_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(holds_nul(k) or holds_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(holds_nul(v) for v in value)
    return False


def _check_storable(fragment: core.Trace) -> None:
    """Raise core.TraceValidationError naming the event or agent (index, id, field) with a NUL
    character (U+0000) in a string: PostgreSQL's text and jsonb cannot hold one, so it is refused
    before any write, on every database alike (every way in: API, upload page, import, OTLP)."""
    refusal = "must not contain a NUL character (U+0000)"
    parts = {"event": fragment.events, "agent": fragment.agents, "edge": fragment.edges, "label": fragment.labels}
    for kind, items in parts.items():
        for index, item in enumerate(items):
            for name, value in vars(item).items():
                if holds_nul(value):
                    raise core.TraceValidationError(refusal, index=index, kind=kind, field=name.rstrip("_"),
                                                    event_id=item.id if kind == "event" else None)
    for name, value in vars(fragment).items():
        if name not in ("events", "agents", "edges", "labels") and holds_nul(value):
            raise core.TraceValidationError(refusal, field=name, kind="trace")


def do_ingest(project: Project, fragment: core.Trace, *, trace: Trace | None = None,
              live: bool = False, broadcast: bool = True) -> IngestResult:
    """Store `fragment` (a whole imported trace or an API batch) into its trace, all or nothing.

    The trace is `trace` when given, else found by the fragment's identity key in `project`, else
    created. Edges may name events stored by earlier batches. Raises IngestConflict (409) on a
    contradicting event and core.TraceValidationError (400) on an edge naming an unknown event.
    `live` marks events as arriving from a running swarm (the trace shows a live badge).
    Content fields are redacted first by SWARMSCOPE_REDACT_PATTERNS (swarmscope.redaction).
    """
    _check_storable(fragment)
    fragment = redact_trace(fragment, compiled(tuple(settings.SWARMSCOPE_REDACT_PATTERNS)))
    with transaction.atomic():
        row, created = _find_or_create_trace(project, fragment, trace)
        new, updates = _merge_batch(None if created else row, fragment.events)
        batch_ids = {e.id for e in fragment.events}
        edge_ids = {i for e in fragment.edges for i in (e.src, e.dst)} - batch_ids
        if edge_ids:
            missing = edge_ids - _known_event_ids(row, edge_ids)
            if missing:
                index = next(i for i, e in enumerate(fragment.edges) if e.src in missing or e.dst in missing)
                edge = fragment.edges[index]
                field = "src" if edge.src in missing else "dst"
                raise core.TraceValidationError(f"names unknown event {getattr(edge, field)!r}", index=index,
                                                field=field, kind="edge")
        existing_edges = set() if created else _stored_edges(row, fragment.edges)
        new_edges = []
        for edge in fragment.edges:
            key = (edge.src, edge.dst, edge.type)
            if key not in existing_edges:
                existing_edges.add(key)
                new_edges.append(edge)
        named = {a.name for a in fragment.agents} | {e.agent for e in new.values()} | {
            e.to for e in new.values() if e.type == "spawn" and e.to}
        existing_agents = {} if created else _stored_agents(row, named)
        agent_updates, agent_creates = [], {}
        for agent in fragment.agents:
            stored = existing_agents.get(agent.name)
            if stored is None:
                agent_creates.setdefault(agent.name, agent)
                continue
            changed = False
            for name in ("role", "parent", "spawned_at", "despawned_at", "system_prompt"):
                if getattr(stored, name) is None and getattr(agent, name) is not None:
                    setattr(stored, name, getattr(agent, name))
                    changed = True
            if changed:
                agent_updates.append(stored)
        for event in new.values():
            if event.agent not in existing_agents and event.agent not in agent_creates:
                agent_creates[event.agent] = core.Agent(name=event.agent, role=event.role)
        _apply_spawns(new.values(), existing_agents, agent_creates, agent_updates)
        existing_labels = set() if created else {_label_key(lb) for lb in row.labels.values()}
        new_labels = [lb for lb in fragment.labels if _label_key(lb.to_dict())
                      not in existing_labels]

        if not (created or new or updates or new_edges or agent_creates or agent_updates or new_labels):
            return IngestResult(row, False, row.seq, 0, 0)

        seq = row.seq + 1
        position = row.event_count
        _insert_events(row, list(new.values()), range(position, position + len(new)), seq)
        if updates:
            rows = []
            for pk, event in updates.values():
                rows.append(Event(pk=pk, seq=seq, **_core_event_columns(event)))
            Event.objects.bulk_update(rows, ["t_end", "role", "from_agent", "to", "tool", "content", "content_ref",
                                             "tokens", "trusted", "attributes", "seq"], batch_size=BULK_BATCH)
        Agent.objects.bulk_create(
            [Agent(trace=row, seq=seq, name=a.name, role=a.role, parent=a.parent, spawned_at=a.spawned_at,
                   despawned_at=a.despawned_at, system_prompt=a.system_prompt, attributes=a.attributes)
             for a in agent_creates.values()], batch_size=BULK_BATCH)
        for agent in agent_updates:
            agent.seq = seq
        Agent.objects.bulk_update(agent_updates, ["role", "parent", "spawned_at", "despawned_at",
                                                  "system_prompt", "seq"])
        Edge.objects.bulk_create([Edge(trace=row, seq=seq, src=e.src, dst=e.dst, type=e.type) for e in new_edges],
                                 batch_size=BULK_BATCH)
        Label.objects.bulk_create([Label(trace=row, seq=seq, key=lb.key, value=lb.value, event_id=lb.event_id,
                                         agent=lb.agent, source=lb.source) for lb in new_labels])

        touched = list(new.values()) + [e for _, e in updates.values()]
        row.seq = seq
        row.event_count += len(new)
        row.agent_count += len(agent_creates)
        row.total_tokens += sum(e.tokens or 0 for e in new.values())
        if touched:
            row.duration_s = max(row.duration_s, max((e.t_end if e.t_end is not None else e.t) for e in touched))
        if not created:
            for name in ("rewards", "costs", "metrics", "attributes"):
                incoming = getattr(fragment, name)
                if incoming:
                    setattr(row, name, {**getattr(row, name), **incoming})
        row.reward = _headline_reward(row.rewards)
        if new_labels:
            row.label_summary = _label_summary(row, new_labels)
        if live:
            row.last_event_at = timezone.now()
        row.save()
        delta = _delta(row, seq, list(agent_creates.values()) + agent_updates, touched, new_edges, new_labels)
        if broadcast:
            transaction.on_commit(lambda: broadcast_trace_delta(row.pk, delta))
        return IngestResult(row, created, seq, len(new), len(updates))


def _delta(row: Trace, seq: int, agents: list, events: list[core.Event], edges: list[core.Edge],
           labels: list[core.Label]) -> dict[str, Any]:
    """The live protocol's delta for what one write under `seq` added or changed."""
    return {
        "type": "delta",
        "seq": seq,
        "agents": [{**{k: getattr(a, k) for k in _AGENT_COLUMNS}, "seq": seq} for a in agents],
        "events": [_event_wire({**_core_event_columns(e), "seq": seq}) for e in events],
        "edges": [{**e.to_dict(), "seq": seq} for e in edges],
        "labels": [_label_wire({"event_id": None, "agent": None, "source": None, **lb.to_dict(), "seq": seq})
                   for lb in labels],
        "trace": trace_summary(row),
    }


def _new_trace_agents(trace: core.Trace) -> dict[str, core.Agent]:
    """The agents `do_ingest` stores for `trace` as a new trace: its own (the first of a name), then
    each agent acting in an event; spawns give parents and spawn times (`_apply_spawns`)."""
    agents: dict[str, core.Agent] = {}
    for agent in trace.agents:
        agents.setdefault(agent.name, agent)
    for event in trace.events:
        if event.agent not in agents:
            agents[event.agent] = core.Agent(name=event.agent, role=event.role)
    _apply_spawns(trace.events, {}, agents, [])
    return agents


def _delete(model, pks: list[int]) -> None:
    for chunk in _in_chunks(pks):
        model.objects.filter(pk__in=chunk).delete()


def _fills_in(before: core.Event, after: core.Event) -> bool:
    """Whether `after` only adds to `before` by the identity rules (`core.merge_event`)."""
    try:
        return core.merge_event(before, after) in (None, after)
    except core.TraceValidationError:
        return False


_COPY_COLUMNS = ("trace_id", "position", "seq") + _EVENT_COLUMNS[:-1]


def _insert_events(trace: Trace, events: list[core.Event], positions: Iterable[int], seq: int) -> None:
    """Insert events at `positions` (one each): PostgreSQL's COPY (4x faster than INSERT for live
    batches), else bulk_create."""
    if not events:
        return
    if connection.vendor != "postgresql":
        Event.objects.bulk_create([Event(trace=trace, position=p, seq=seq, **_core_event_columns(e))
                                   for p, e in zip(positions, events)], batch_size=BULK_BATCH)
        return
    table = Event._meta.db_table
    with connection.cursor() as cursor, cursor.cursor.copy(
            f"COPY {table} ({', '.join(connection.ops.quote_name(c) for c in _COPY_COLUMNS)}) FROM STDIN") as copy:
        for p, event in zip(positions, events):
            columns = _core_event_columns(event)
            columns["attributes"] = Jsonb(columns["attributes"])
            copy.write_row((trace.pk, p, seq, *(columns[c] for c in _EVENT_COLUMNS[:-1])))


def _apply_spawns(events, existing: dict[str, Agent], creates: dict[str, core.Agent],
                  updates: list[Agent]) -> None:
    """A `spawn` event of agent A naming B in `to` makes A the parent of B and sets B's spawn time,
    where the agent does not say otherwise (the Dynamic Dec-POMDP's agent set, DESIGN.md)."""
    for event in sorted((e for e in events if e.type == "spawn" and e.to), key=lambda e: e.t):
        target = existing.get(event.to) or creates.get(event.to)
        if target is None:
            target = creates[event.to] = core.Agent(name=event.to, role=event.role)
        changed = False
        if target.parent is None and event.to != event.agent:
            target.parent, changed = event.agent, True
        if target.spawned_at is None:
            target.spawned_at, changed = event.t, True
        if changed and isinstance(target, Agent) and target not in updates:
            updates.append(target)


def _headline_reward(rewards: dict[str, Any]) -> float | None:
    for key in ("team", "outcome", "reward"):
        if isinstance(rewards.get(key), (int, float)):
            return float(rewards[key])
    numbers = [v for v in rewards.values() if isinstance(v, (int, float))]
    return float(numbers[0]) if numbers else None


def _label_summary(trace: Trace, new_labels: list[core.Label]) -> str:
    parts = [p for p in trace.label_summary.split("; ") if p]
    for label in new_labels:
        if label.key in SUMMARY_LABELS:
            text = f"{label.key}={label.value}"
            if text not in parts:
                parts.append(text)
    return "; ".join(parts)[:500]


def list_traces(project_ids: Iterable[int], *, query: str = "", order: str = "-created_at"):
    """Traces of the given projects, newest first, filtered by name/system/label text."""
    qs = Trace.objects.filter(project_id__in=list(project_ids))
    if query:
        qs = qs.filter(Q(name__icontains=query) | Q(system__icontains=query) | Q(label_summary__icontains=query)
                       | Q(source_format__icontains=query))
    return qs.order_by(order, "-id")


@dataclass
class FileOutcome:
    """One input file's result: `lines` are the human-readable report lines."""

    name: str
    traces: list[Trace]
    skipped: str | None = None
    error: str | None = None
    unchanged: frozenset[int] = frozenset()

    @property
    def rows(self) -> list[tuple[str, Trace | None]]:
        """Report lines, each with the trace it is about (None for a failure or a skip)."""
        return list(zip(self.lines, self.traces)) if self.traces else [(line, None) for line in self.lines]

    @property
    def lines(self) -> list[str]:
        if self.error:
            return [f"{self.name}: failed: {self.error}"]
        if self.skipped:
            return [f"{self.name}: skipped: {self.skipped}"]
        return [f"{self.name}: imported as trace {t.pk}: {t.agent_count} agents, {t.event_count} events"
                + (" (already stored, nothing new)" if t.pk in self.unchanged else "") for t in self.traces]


def do_import_sources(project: Project, sources: Iterable[SourceFile]) -> list[FileOutcome]:
    """Import files into `project`: each trace in its own transaction, all of it or nothing.

    Chunks of one span trace spread over several files merge into one trace. Importing the same
    file twice changes nothing. Never raises on bad input: failures are in the outcomes.
    """
    result = read_files(sources)
    stored: dict[str, Trace] = {}
    unchanged: set[int] = set()
    errors: dict[str, str] = {}
    for trace in result.traces:
        try:
            ingested = do_ingest(project, trace)
            stored[trace.identity_key] = ingested.trace
            if ingested.changed:
                request_metrics(ingested.trace)
            else:
                unchanged.add(ingested.trace.pk)
        except IngestConflict as exc:
            errors[trace.identity_key] = f"conflicts with the stored trace {trace.identity_key}: {exc}"
        except core.TraceValidationError as exc:
            errors[trace.identity_key] = f"trace {trace.identity_key}: {exc}"
    outcomes = []
    for report in result.files:
        failure = report.error or next((errors[k] for k in report.trace_keys if k in errors), None)
        outcomes.append(FileOutcome(name=report.name, traces=[stored[k] for k in report.trace_keys if k in stored],
                                    skipped=report.skipped, error=failure, unchanged=frozenset(unchanged)))
    return outcomes


def request_metrics(trace: Trace) -> None:
    """Enqueue the metrics computation of `trace` on the `default` queue, after commit."""
    transaction.on_commit(lambda: enqueue("webapp.traces.tasks.refresh_metrics", trace.pk))


def do_ingest_spans(project: Project, module, trace_id: str, spans: list[Span], source: str) -> IngestResult:
    """Store the `spans` of one trace id (from an OTLP request) and re-derive the trace, all or nothing.

    `module` is the span format (swarmscope.importers.otlp). A span id already stored is ignored
    when the span is the same (an exporter's retry) and counted in `rejected` when it is not. The
    trace is rebuilt from all its spans, so it does not depend on how they were batched or ordered,
    and the stored trace is made equal to that build (`_store_build`): within the request while the
    trace has at most SWARMSCOPE_OTLP_SYNC_SPANS spans, else by the `derive_spans` task after
    commit. Raises core.TraceValidationError or ValueError, naming the span, when the spans do not
    form a valid trace (when the build is deferred: a span without an id or with a NUL character).
    """
    patterns = compiled(tuple(settings.SWARMSCOPE_REDACT_PATTERNS))
    incoming: dict[str, dict[str, Any]] = {}
    rejected = 0
    for index, span in enumerate(spans):
        if not span.span_id:
            raise core.TraceValidationError(f"span {span.name!r} has no span id", index=index, kind="span",
                                            field="span_id")
        data = span.to_dict()
        if holds_nul(data):
            raise core.TraceValidationError(f"span {span.span_id} ({span.name!r}) must not contain a NUL "
                                            "character (U+0000)", index=index, kind="span")
        data = redact_value(data, patterns)
        rejected += incoming.setdefault(span.span_id, data) != data
    with transaction.atomic():
        row = _lock_or_create_span_trace(project, module, trace_id)
        known = {i: d for chunk in _in_chunks(incoming)
                 for i, d in row.spans.filter(span_id__in=chunk).values_list("span_id", "data")}
        rejected += sum(known[i] != d for i, d in incoming.items() if i in known)
        new = [Span.from_dict(d) for i, d in incoming.items() if i not in known]
        if not new:
            return IngestResult(row, False, row.seq, 0, 0, rejected)
        stored = row.spans.count()
        if stored + len(new) <= settings.SWARMSCOPE_OTLP_SYNC_SPANS:
            trace = module.build(trace_id, _stored_spans(row) + new, [source])
            core.validate_trace(trace)
            result = _store_build(row, trace)
            result.created, result.rejected = stored == 0, rejected
        else:  # the spans were checked as they were decoded (ids, times) and above (NUL)
            Trace.objects.filter(pk=row.pk).update(spans_pending=True)
            transaction.on_commit(lambda: _enqueue_derive(row.pk, source))
            result = IngestResult(row, False, row.seq, 0, 0, rejected)
        StoredSpan.objects.bulk_create([StoredSpan(trace=row, span_id=s.span_id, data=s.to_dict()) for s in new],
                                       batch_size=BULK_BATCH)
        return result


def _lock_or_create_span_trace(project: Project, module, trace_id: str) -> Trace:
    """The locked row of a span trace, created (empty) when missing. Two first requests of one
    trace at once: the second insert waits for the first to commit, fails, and locks its row."""
    key = f"{module.FORMAT}:{trace_id}"
    row = Trace.objects.select_for_update().filter(project=project, identity_key=key).first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            return Trace.objects.create(project=project, identity_key=key, source_format=module.FORMAT,
                                        source_id=trace_id, name=trace_id)
    except IntegrityError:
        return Trace.objects.select_for_update().get(project=project, identity_key=key)


def _stored_spans(row: Trace) -> list[Span]:
    return [Span.from_dict(d) for d in row.spans.values_list("data", flat=True)]


def _enqueue_derive(trace_pk: int, source: str) -> None:
    """Ask a worker to re-derive a trace. A broker that cannot be reached never fails the committed
    request: the trace keeps `spans_pending`, and the next request or the periodic
    `derive_pending_spans` asks again."""
    try:
        enqueue("webapp.traces.tasks.derive_spans", trace_pk, source)
    except Exception:  # noqa: BLE001 - any broker error
        logger.warning("could not enqueue derive_spans(%s); it stays pending", trace_pk, exc_info=True)


def do_derive_spans(trace_pk: int, module, source: str) -> IngestResult | None:
    """Re-derive a trace from all its stored spans if requests left it `spans_pending`; None when
    there was nothing to do. The build runs outside any transaction (SQLite's write lock is held
    only while the difference is written); a build older than the stored one is dropped."""
    if not Trace.objects.filter(pk=trace_pk, spans_pending=True).update(spans_pending=False):
        return None
    row = Trace.objects.get(pk=trace_pk)
    try:
        trace = module.build(row.source_id, _stored_spans(row), [source])
        core.validate_trace(trace)
    except (core.TraceValidationError, ValueError):  # its spans were checked when they came: a bug
        logger.exception("trace %s: its stored spans do not form a valid trace; kept as derived before", trace_pk)
        return None
    with transaction.atomic():
        row = Trace.objects.select_for_update().get(pk=trace_pk)
        if row.attributes.get("spans", 0) > trace.attributes["spans"]:
            return None
        return _store_build(row, trace)


def _store_build(row: Trace, build: core.Trace) -> IngestResult:
    """Make `row`'s events, edges, agents and labels equal to what `do_ingest` would store for
    `build` in a new trace, writing only the difference under the next seq. Viewers get a delta
    when the difference only adds or fills in; else (something removed or changed) a new snapshot."""
    _check_storable(build)
    build = redact_trace(build, compiled(tuple(settings.SWARMSCOPE_REDACT_PATTERNS)))
    seq = row.seq + 1
    events = {e.id: e for e in build.events}
    stored_events = {r["event_id"]: r for r in row.events.values("id", "position", *_EVENT_COLUMNS)}
    removed = [r["id"] for i, r in stored_events.items() if i not in events]
    changed: list[tuple[dict[str, Any], core.Event]] = []  # (stored row, new form)
    compatible = True
    for event_id, event in events.items():
        before = stored_events.get(event_id)
        if before is not None and _core_event_columns(event) != {c: before[c] for c in _EVENT_COLUMNS[:-1]}:
            changed.append((before, event))
            compatible &= _fills_in(_event_row_to_core(before), event)
    added = [e for i, e in events.items() if i not in stored_events]
    edges = {(e.src, e.dst, e.type): e for e in build.edges}
    stored_edges = {(r["src"], r["dst"], r["type"]): r["id"] for r in row.edges.values("id", "src", "dst", "type")}
    agents = _new_trace_agents(build)
    stored_agents = {a.name: a for a in row.agents.all()}
    changed_agents = []
    for name, agent in agents.items():
        before = stored_agents.get(name)
        if before is not None and any(getattr(before, f) != getattr(agent, f) for f in _AGENT_COLUMNS):
            compatible &= all(getattr(before, f) in (None, getattr(agent, f)) for f in _AGENT_COLUMNS
                              if f != "attributes") and before.attributes.items() <= agent.attributes.items()
            for f in _AGENT_COLUMNS:
                setattr(before, f, getattr(agent, f))
            before.seq = seq
            changed_agents.append(before)
    labels = {_label_key(lb.to_dict()): lb for lb in build.labels}
    stored_labels = {_label_key(r): r["id"] for r in row.labels.values()}
    gone = (removed or stored_edges.keys() - edges.keys() or stored_agents.keys() - agents.keys()
            or stored_labels.keys() - labels.keys())
    # A changed event is deleted and inserted again at its position: bulk_update's CASE per row
    # costs seconds for a few thousand rows.
    _delete(Event, removed + [before["id"] for before, _ in changed])
    _insert_events(row, [event for _, event in changed], [before["position"] for before, _ in changed], seq)
    last = max((r["position"] for r in stored_events.values()), default=-1)
    _insert_events(row, added, range(last + 1, last + 1 + len(added)), seq)
    _delete(Edge, [pk for k, pk in stored_edges.items() if k not in edges])
    new_edges = [e for k, e in edges.items() if k not in stored_edges]
    Edge.objects.bulk_create([Edge(trace=row, seq=seq, src=e.src, dst=e.dst, type=e.type) for e in new_edges],
                             batch_size=BULK_BATCH)
    _delete(Agent, [a.pk for name, a in stored_agents.items() if name not in agents])
    Agent.objects.bulk_update(changed_agents, list(_AGENT_COLUMNS) + ["seq"], batch_size=BULK_BATCH)
    new_agents = [a for name, a in agents.items() if name not in stored_agents]
    Agent.objects.bulk_create([Agent(trace=row, seq=seq, **{f: getattr(a, f) for f in _AGENT_COLUMNS})
                               for a in new_agents], batch_size=BULK_BATCH)
    _delete(Label, [pk for k, pk in stored_labels.items() if k not in labels])
    new_labels = [lb for k, lb in labels.items() if k not in stored_labels]
    Label.objects.bulk_create([Label(trace=row, seq=seq, key=lb.key, value=lb.value, event_id=lb.event_id,
                                     agent=lb.agent, source=lb.source) for lb in new_labels])
    for name in ("name", "system", "topology", "task_id"):
        setattr(row, name, getattr(build, name) or (build.source_id[:200] if name == "name" else ""))
    row.attributes, row.costs = build.attributes, build.costs
    row.rewards, row.metrics = {**row.rewards, **build.rewards}, {**row.metrics, **build.metrics}
    row.reward = _headline_reward(row.rewards)
    row.seq, row.event_count, row.agent_count = seq, len(events), len(agents)
    row.total_tokens = sum(e.tokens or 0 for e in build.events)
    row.duration_s = max((e.t_end if e.t_end is not None else e.t for e in build.events), default=0.0)
    row.label_summary = _label_summary(Trace(label_summary=""), build.labels)
    row.last_event_at = timezone.now()
    if gone or not compatible:
        row.reset_seq = seq
        row.save()
        transaction.on_commit(lambda: broadcast_trace_reset(row.pk, seq))
    else:
        row.save()
        delta = _delta(row, seq, new_agents + changed_agents, added + [event for _, event in changed],
                       new_edges, new_labels)
        transaction.on_commit(lambda: broadcast_trace_delta(row.pk, delta))
    return IngestResult(row, False, seq, len(added), len(changed))
