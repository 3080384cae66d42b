"""Reads of stored traces: the wire forms of the live protocol (snapshot, delta), summaries, the
core form for metrics and exports, and the trace list.

Writes are `webapp.traces.ingest` (batches and files) and `webapp.traces.span_ingest` (OTLP
spans); both build their deltas with `write_delta` here, so the wire form lives in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from swarmscope import model as core
from swarmscope.metrics import compute_metrics

from .models import Agent, Edge, Event, Label, Trace

#: Event columns holding the event itself, in the order of `event_columns`; EVENT_COLUMNS adds `seq`.
EVENT_DATA_COLUMNS = (
    "event_id",
    "t",
    "t_end",
    "type",
    "agent",
    "role",
    "from_agent",
    "to",
    "tool",
    "content",
    "content_ref",
    "tokens",
    "trusted",
    "attributes",
)
EVENT_COLUMNS = EVENT_DATA_COLUMNS + ("seq",)
AGENT_COLUMNS = ("name", "role", "parent", "spawned_at", "despawned_at", "system_prompt", "attributes")
LABEL_COLUMNS = ("key", "value", "event_id", "agent", "source", "seq")

#: A trace is live while events arrived through the API in the last LIVE_WINDOW_S seconds.
LIVE_WINDOW_S = 30


# --- wire and core forms of rows ---------------------------------------------------------------


def event_wire(row: dict[str, Any]) -> dict[str, Any]:
    """An event row (EVENT_COLUMNS) in the live protocol's form: only set fields, `from_agent` as `from`."""
    wire = {"id": row["event_id"], "t": row["t"], "type": row["type"], "agent": row["agent"], "seq": row["seq"]}
    for column, name in (
        ("t_end", "t_end"),
        ("role", "role"),
        ("from_agent", "from"),
        ("to", "to"),
        ("tool", "tool"),
        ("content", "content"),
        ("content_ref", "content_ref"),
        ("tokens", "tokens"),
        ("trusted", "trusted"),
    ):
        if row[column] is not None:
            wire[name] = row[column]
    if row["attributes"]:
        wire["attributes"] = row["attributes"]
    return wire


def label_wire(row: dict[str, Any]) -> dict[str, Any]:
    """A label row (LABEL_COLUMNS) in the live protocol's form: only set fields."""
    return {k: row[k] for k in LABEL_COLUMNS if row[k] is not None}


def event_from_row(row: dict[str, Any]) -> core.Event:
    """The swarmscope Event of an event row (EVENT_DATA_COLUMNS at least)."""
    return core.Event(
        id=row["event_id"],
        t=row["t"],
        t_end=row["t_end"],
        type=row["type"],
        agent=row["agent"],
        role=row["role"],
        from_=row["from_agent"],
        to=row["to"],
        tool=row["tool"],
        content=row["content"],
        content_ref=row["content_ref"],
        tokens=row["tokens"],
        trusted=row["trusted"],
        attributes=row["attributes"] or {},
    )


def agent_from_row(row: dict[str, Any]) -> core.Agent:
    """The swarmscope Agent of an agent row (AGENT_COLUMNS at least)."""
    return core.Agent(
        name=row["name"],
        role=row["role"],
        parent=row["parent"],
        spawned_at=row["spawned_at"],
        despawned_at=row["despawned_at"],
        system_prompt=row["system_prompt"],
        attributes=row["attributes"] or {},
    )


def event_columns(event: core.Event) -> dict[str, Any]:
    """The EVENT_DATA_COLUMNS of `event`, by column name."""
    return {
        "event_id": event.id,
        "t": event.t,
        "t_end": event.t_end,
        "type": event.type,
        "agent": event.agent,
        "role": event.role,
        "from_agent": event.from_,
        "to": event.to,
        "tool": event.tool,
        "content": event.content,
        "content_ref": event.content_ref,
        "tokens": event.tokens,
        "trusted": event.trusted,
        "attributes": event.attributes,
    }


# --- summaries, snapshots and deltas -----------------------------------------------------------


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
        "session_id": trace.session_id,
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


def is_live(trace: Trace) -> bool:
    """A trace is live while events arrived through the API in the last LIVE_WINDOW_S seconds."""
    return bool(trace.last_event_at and (timezone.now() - trace.last_event_at).total_seconds() < LIVE_WINDOW_S)


def _collections_since(trace: Trace, after_seq: int, upto_seq: int) -> dict[str, list[dict[str, Any]]]:
    # Bounded above too: under READ COMMITTED (PostgreSQL) a batch committed after the trace row was
    # read would otherwise ride along under the older seq, and its own delta would deliver it again.
    def rows(model, columns, order):
        return model.objects.filter(trace=trace, seq__gt=after_seq, seq__lte=upto_seq).order_by(*order).values(*columns)

    return {
        "agents": list(rows(Agent, AGENT_COLUMNS + ("seq",), ("id",))),
        "events": [event_wire(r) for r in rows(Event, EVENT_COLUMNS, ("position",))],
        "edges": list(rows(Edge, ("src", "dst", "type", "seq"), ("id",))),
        "labels": [label_wire(r) for r in rows(Label, LABEL_COLUMNS, ("id",))],
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

    When the trace was rebuilt after `seq` (its `reset_seq`, see webapp.traces.span_ingest) a delta
    cannot express the change, and the answer is a fresh snapshot instead.
    """
    with transaction.atomic():
        current, reset_seq = Trace.objects.values_list("seq", "reset_seq").get(pk=trace.pk)
        if reset_seq > seq:
            return get_snapshot(trace)
        collections = _collections_since(trace, seq, current)
    return {"type": "delta", "seq": current, **collections}


def write_delta(
    row: Trace, seq: int, agents: list, events: list[core.Event], edges: list[core.Edge], labels: list[core.Label]
) -> dict[str, Any]:
    """The live protocol's delta for what one write under `seq` added or changed (`agents`: core
    Agents or Agent rows, read by AGENT_COLUMNS); `row` is the trace as saved."""
    return {
        "type": "delta",
        "seq": seq,
        "agents": [{**{k: getattr(a, k) for k in AGENT_COLUMNS}, "seq": seq} for a in agents],
        "events": [event_wire({**event_columns(e), "seq": seq}) for e in events],
        "edges": [{**e.to_dict(), "seq": seq} for e in edges],
        "labels": [
            label_wire({"event_id": None, "agent": None, "source": None, **lb.to_dict(), "seq": seq}) for lb in labels
        ],
        "trace": trace_summary(row),
    }


# --- the core form, metrics, lists -------------------------------------------------------------


def to_core_trace(trace: Trace) -> core.Trace:
    """The stored trace as a swarmscope Trace (for metrics and exports)."""
    result = core.Trace(
        source_format=trace.source_format,
        source_id=trace.source_id,
        name=trace.name,
        system=trace.system,
        topology=trace.topology,
        task_id=trace.task_id,
        rewards=dict(trace.rewards),
        costs=dict(trace.costs),
        metrics=dict(trace.metrics),
        attributes=dict(trace.attributes),
    )
    result.agents = [agent_from_row(a) for a in trace.agents.order_by("id").values()]
    result.events = [event_from_row(r) for r in trace.events.order_by("position").values(*EVENT_COLUMNS)]
    result.edges = [
        core.Edge(src=e["src"], dst=e["dst"], type=e["type"])
        for e in trace.edges.order_by("id").values("src", "dst", "type")
    ]
    result.labels = [
        core.Label(key=lb["key"], value=lb["value"], event_id=lb["event_id"], agent=lb["agent"], source=lb["source"])
        for lb in trace.labels.order_by("id").values()
    ]
    return result


#: Callables `trace -> {agent: (estimate, ci_low, ci_high)}` of agent-removal effects, registered by
#: a layer above (webapp.counterfactuals, in its AppConfig.ready) so that this layer imports none:
#: with them `compute_metrics` decides free-riding, without them it says "needs attribution".
#: A layer that stores new attributions calls `forget_computed_metrics`.
ATTRIBUTION_SOURCES: list[Callable[[Trace], dict[str, tuple[float, float, float]]]] = []


def forget_computed_metrics(trace_id: int) -> None:
    """Drop the cached computed metrics of a trace (recomputed on next read)."""
    Trace.objects.filter(pk=trace_id).update(computed_metrics_seq=-1)


def get_computed_metrics(trace: Trace) -> dict[str, Any]:
    """Metrics of swarmscope.metrics for the trace's current seq, cached on the row; free-riding from
    the agent-removal attributions of ATTRIBUTION_SOURCES, where there are any."""
    if trace.computed_metrics_seq == trace.seq and trace.computed_metrics:
        return trace.computed_metrics
    attributions: dict[str, tuple[float, float, float]] = {}
    for source in ATTRIBUTION_SOURCES:
        attributions.update(source(trace))
    metrics = compute_metrics(to_core_trace(trace), attributions or None) if trace.event_count else {}
    Trace.objects.filter(pk=trace.pk).update(computed_metrics=metrics, computed_metrics_seq=trace.seq)
    trace.computed_metrics, trace.computed_metrics_seq = metrics, trace.seq
    return metrics


def list_traces(project_ids: Iterable[int], *, query: str = "", session: str = "", order: str = "-created_at"):
    """Traces of the given projects, newest first, filtered by name/system/label text and by
    session id (exact)."""
    qs = Trace.objects.filter(project_id__in=list(project_ids))
    if session:
        qs = qs.filter(session_id=session)
    if query:
        qs = qs.filter(
            Q(name__icontains=query)
            | Q(system__icontains=query)
            | Q(label_summary__icontains=query)
            | Q(source_format__icontains=query)
            | Q(session_id=query)
        )
    return qs.order_by(order, "-id")


#: The most traces a session page lists.
MAX_SESSION_TRACES = 1000


def session_traces(project_ids: Iterable[int], session: str) -> list[Trace]:
    """The traces of one session in the order they ran: by the source's start time
    (`attributes.start_time_unix_nano`, `attributes.started_at`) where the importer gives one,
    else by arrival. At most MAX_SESSION_TRACES."""
    rows = list(
        Trace.objects.filter(project_id__in=list(project_ids), session_id=session).order_by("created_at", "id")[
            :MAX_SESSION_TRACES
        ]
    )
    return sorted(rows, key=_started_key)


def _started_key(trace: Trace) -> tuple[float, float, int]:
    attributes = trace.attributes if isinstance(trace.attributes, dict) else {}
    started = attributes.get("start_time_unix_nano")
    seconds = started / 1e9 if isinstance(started, (int, float)) and not isinstance(started, bool) else None
    if seconds is None and isinstance(attributes.get("started_at"), str):
        try:
            seconds = datetime.fromisoformat(attributes["started_at"].replace("Z", "+00:00")).timestamp()
        except ValueError:
            seconds = None
    arrived = trace.created_at.timestamp() if trace.created_at else 0.0
    return (seconds if seconds is not None else arrived, arrived, trace.pk)
