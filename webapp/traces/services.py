"""Reads of stored traces: the wire forms of the live protocol (snapshot, delta), summaries, the
core form for metrics and exports, and the trace list.

Writes are `webapp.traces.ingest` (batches and files) and `webapp.traces.span_ingest` (OTLP
spans); both build their deltas with `write_delta` here, so the wire form lives in one place.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, F, Max, Min, OuterRef, Q, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Greatest, Least
from django.utils import timezone

from swarmscope import model as core
from swarmscope.inputs import id_or_none
from swarmscope.metrics import compute_metrics
from swarmscope.otlp_export import PageContext, SpanPlan
from webapp.accounts.models import Project
from webapp.web.broadcast import broadcast_trace_metrics
from webapp.web.jobs import enqueue

from . import facets, prices, search
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

#: A trace is live while events arrived through the API in the last LIVE_WINDOW_S seconds
#: (SWARMSCOPE_LIVE_IDLE_S): after that long without events its stream counts as ended.
LIVE_WINDOW_S: float = settings.SWARMSCOPE_LIVE_IDLE_S

log = logging.getLogger(__name__)


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
        "reset_seq": trace.reset_seq,
        "event_count": trace.event_count,
        "agent_count": trace.agent_count,
        "total_tokens": trace.total_tokens,
        "estimated_tokens": trace.estimated_tokens,
        "duration_s": trace.duration_s,
        "reward": trace.reward,
        "cost": {
            "usd": trace.cost_usd,
            "estimated": trace.cost_estimated,
            "models": trace.model_names.split(),
            "unknown_models": trace.unknown_models.split(),
        },
        "error_count": trace.error_count,
        "labels": trace.label_summary,
        "live": is_live(trace),
        "live_idle_s": LIVE_WINDOW_S,
        "created_at": trace.created_at.isoformat() if trace.created_at else None,
    }


def token_figure(measured: int | None, estimated: int) -> dict[str, Any]:
    """How a trace's tokens read (list, session, trace page; static/js/lib/format.js `tokenFigure`
    says the same): `text` the measured total, or "~N est." where nothing was measured;
    `estimated` whether `text` is an estimate; `title` what the figure is, naming an estimate
    that is kept out of it (docs/metrics.md "Tokens")."""
    if measured is not None:
        title = "measured token usage, as the source reported it"
        if estimated:
            title += (
                f"; ~{estimated} more estimated from content (characters / 4) for events without usage, not counted"
            )
        return {"text": str(measured), "estimated": False, "title": title}
    if estimated:
        title = "estimate: the source measured no token usage; characters / 4 of the events' content"
        return {"text": f"~{estimated} est.", "estimated": True, "title": title}
    return {"text": "–", "estimated": False, "title": "no token usage reported"}


def cost_figure(trace: Trace) -> dict[str, Any]:
    """How a trace's cost reads beside its tokens: `text` ("$0.16", "~$0.16" where it prices
    estimated tokens, "unknown model" where no model it names has a price, "" where it names no
    model), `estimated`, `unknown` (the models without a price) and `title` (a tooltip)."""
    unknown = trace.unknown_models
    if trace.cost_usd is None:
        if unknown:
            return {"text": "unknown model", "estimated": False, "unknown": unknown,
                    "title": f"no price for {unknown} in the price table (genai-prices)"}  # fmt: skip
        return {"text": "", "estimated": False, "unknown": "", "title": ""}
    text = prices.format_usd(trace.cost_usd)
    title = "cost of its LLM calls at list prices (genai-prices)"
    if trace.cost_estimated:
        text, title = "~" + text, title + "; some tokens are estimates"
    if unknown:
        text, title = text + "+", title + f"; no price for {unknown}: at least this"
    return {"text": text, "estimated": trace.cost_estimated, "unknown": unknown, "title": title}


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
    # the metrics first: computing them stores the list facts too (models, cost), which the summary shows
    computed = get_computed_metrics(trace) if with_metrics else None
    summary = trace_summary(trace)
    if with_metrics:
        summary["computed_metrics"] = computed
    return {"type": "snapshot", "seq": trace.seq, "trace": summary, **collections}


def get_delta_since(trace: Trace, seq: int) -> dict[str, Any]:
    """One delta holding every row written after `seq` (the answer to a resume).

    When the trace was rebuilt after `seq` (its `reset_seq`, see webapp.traces.span_ingest) a delta
    cannot express the change, and the answer is a fresh snapshot instead. The delta carries the
    trace's summary as of now (`trace_summary`: live or closed, counts), as each live delta does.
    """
    with transaction.atomic():
        row = Trace.objects.get(pk=trace.pk)
        if row.reset_seq > seq:
            return get_snapshot(trace)
        collections = _collections_since(trace, seq, row.seq)
    return {"type": "delta", "seq": row.seq, **collections, "trace": trace_summary(row)}


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
    result = core_trace_header(trace)
    # rows of a batch still being staged (seq > trace.seq, webapp.traces.ingest) are not part of it yet
    published = {"seq__lte": trace.seq}
    result.events = [
        event_from_row(r) for r in trace.events.filter(**published).order_by("position").values(*EVENT_COLUMNS)
    ]
    result.edges = [
        core.Edge(src=e["src"], dst=e["dst"], type=e["type"])
        for e in trace.edges.filter(**published).order_by("id").values("src", "dst", "type")
    ]
    return result


def core_trace_header(trace: Trace) -> core.Trace:
    """The stored trace as a swarmscope Trace without its events and edges: its fields, agents and
    labels (what `StoredSpanSource` does not page)."""
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
    published = {"seq__lte": trace.seq}
    result.agents = [agent_from_row(a) for a in trace.agents.filter(**published).order_by("id").values()]
    result.labels = [
        core.Label(key=lb["key"], value=lb["value"], event_id=lb["event_id"], agent=lb["agent"], source=lb["source"])
        for lb in trace.labels.filter(**published).order_by("id").values()
    ]
    return result


class StoredSpanSource:
    """A stored trace's events for `swarmscope.otlp_export.iter_otlp_json(source=...)`, read from
    the database a page of SWARMSCOPE_EXPORT_PAGE_EVENTS events at a time (keyset pages on
    `position`): the export holds one page of events, their links and folded tool results, and the
    plan (per agent: its time window; per folded tool call: the two event ids, and the folded
    result's links from other spans), not the trace. The plan's end, windows and agents are
    aggregates the database computes; the edges are read once, in the order of their destination's
    position, beside the pages; `context` asks for the page's calls' folded results."""

    def __init__(self, trace: Trace, page_events: int | None = None):
        self.trace = trace
        self.page_events = max(1, page_events or settings.SWARMSCOPE_EXPORT_PAGE_EVENTS)
        self.events = trace.events.filter(seq__lte=trace.seq)
        self.edges = trace.edges.filter(seq__lte=trace.seq)
        last = Coalesce("t_end", "t")
        agents = (
            self.events.values("agent")
            .annotate(first=Min("position"), low=Min(Least("t", last)), high=Max(Greatest("t", last)))
            .order_by("first")
        )
        windows = {a["agent"]: (a["low"], a["high"]) for a in agents}
        span = self.events.aggregate(end=Max(last), first=Min("position"), last=Max("position"), count=Count("id"))
        end = span["end"]
        # published positions are dense (a staged batch takes those after them): an event's index
        # in the trace is then its position's offset; else counted (one query per folded result)
        dense = span["count"] and span["last"] - span["first"] + 1 == span["count"]
        self._first_position = span["first"] if dense else None

        def of(field: str, end: str):
            return Subquery(self.events.filter(event_id=OuterRef(end)).values(field)[:1])

        # tool_dependency edges from a call to a result of one agent, in trace order: folded as
        # `fold_tool_results` folds them (the first of each call and of each result), as they come
        pairs = (
            self.edges.filter(type="tool_dependency")
            .annotate(call_type=of("type", "src"), call_agent=of("agent", "src"))
            .annotate(result_type=of("type", "dst"), result_agent=of("agent", "dst"))
            .filter(call_type="tool_call", result_type="tool_result", call_agent=F("result_agent"))
            .order_by("id")
            .values_list("src", "dst")
        )
        folded: dict[str, str] = {}
        calls_used: set[str] = set()
        for src, dst in pairs.iterator(chunk_size=self.page_events):
            if src not in calls_used and dst not in folded:
                folded[dst] = src
                calls_used.add(src)
        del calls_used
        self.plan = SpanPlan(
            end=0.0 if end is None else end, windows=windows, event_agents=list(windows), folded=folded
        )
        # The links of folded results (their spans are their calls', maybe in an earlier page):
        # kept here, but those from the call itself (the same span, no link).
        self._result_links: dict[str, list[core.Edge]] = {}
        into_results = self._linked_edges().filter(dst_type="tool_result").values_list("src", "dst", "type")
        for src, dst, kind in into_results.iterator(chunk_size=self.page_events):
            if dst in folded and folded.get(src, src) != folded[dst]:
                self._result_links.setdefault(dst, []).append(core.Edge(src=src, dst=dst, type=kind))

    def _linked_edges(self):
        """The published edges between two events of the trace, with their destination's position and type."""
        dst = self.events.filter(event_id=OuterRef("dst"))
        return (
            self.edges.annotate(
                dst_position=Subquery(dst.values("position")[:1]), dst_type=Subquery(dst.values("type")[:1])
            )
            .filter(dst_position__isnull=False, src__in=self.events.values("event_id"))
            .order_by("dst_position", "id")
        )

    def pages(self) -> Iterable[list[tuple[int, core.Event]]]:
        """Pages of events in trace order; beside them, one pass over the edges by destination
        position (`_page_edges`: those into the page), so no page scans the trace's edges."""
        edges = self._linked_edges().values_list("src", "dst", "type", "dst_position").iterator(self.page_events)
        ahead = next(edges, None)
        after, index = None, 0
        while True:
            # not filtered on seq in SQL, where SQLite's planner would take the (trace, seq) index
            # and sort every page: staged rows take the positions after the published ones
            rows = self.trace.events.order_by("position")
            if after is not None:
                rows = rows.filter(position__gt=after)
            page = rows.values("position", *EVENT_COLUMNS)[: self.page_events]
            page = [r for r in page if r["seq"] <= self.trace.seq]
            if not page:
                return
            self._positions = {r["event_id"]: index + i for i, r in enumerate(page)}
            self._page_edges = []
            while ahead is not None and ahead[3] <= page[-1]["position"]:
                if ahead[1] not in self.plan.folded:  # a folded result's links go with its call
                    self._page_edges.append(core.Edge(src=ahead[0], dst=ahead[1], type=ahead[2]))
                ahead = next(edges, None)
            yield [(index + i, event_from_row(r)) for i, r in enumerate(page)]
            index, after = index + len(page), page[-1]["position"]

    def context(self, page: list[tuple[int, core.Event]], results: list[str]):
        found: dict[str, tuple[int, core.Event]] = {}
        for row in self.trace.events.filter(event_id__in=results).values("position", *EVENT_COLUMNS):
            index = self._positions.get(row["event_id"])
            if index is None and self._first_position is not None:
                index = row["position"] - self._first_position
            elif index is None:  # outside the page: its index is the count of events before it
                index = self.events.filter(position__lt=row["position"]).count()
            found[row["event_id"]] = (index, event_from_row(row))
        edges = self._page_edges + [edge for result in results for edge in self._result_links.get(result, ())]
        return PageContext(results=found, edges=edges, known={e.src for e in edges})  # sources are events


#: Callables `trace -> {agent: (estimate, ci_low, ci_high)}` of agent-removal effects, registered by
#: a layer above (webapp.counterfactuals, in its AppConfig.ready) so that this layer imports none:
#: with them `compute_metrics` decides free-riding, without them it says "needs attribution".
#: A layer that stores new attributions calls `forget_computed_metrics`.
ATTRIBUTION_SOURCES: list[Callable[[Trace], dict[str, tuple[float, float, float]]]] = []


def forget_computed_metrics(trace_id: int) -> None:
    """Drop the cached computed metrics of a trace and have a worker compute them again after
    commit (a read before that computes them itself)."""
    Trace.objects.filter(pk=trace_id).update(computed_metrics_seq=-1)
    transaction.on_commit(lambda: enqueue("webapp.traces.tasks.refresh_metrics", trace_id))


def get_computed_metrics(trace: Trace) -> dict[str, Any]:
    """Metrics of swarmscope.metrics for the trace's current seq, cached on the row; free-riding from
    the agent-removal attributions of ATTRIBUTION_SOURCES, where there are any."""
    if trace.computed_metrics_seq == trace.seq and trace.computed_metrics:
        return trace.computed_metrics
    attributions: dict[str, tuple[float, float, float]] = {}
    for source in ATTRIBUTION_SOURCES:
        attributions.update(source(trace))
    core_trace = to_core_trace(trace) if trace.event_count else None
    metrics = compute_metrics(core_trace, attributions or None) if core_trace is not None else {}
    facts = list_facts(core_trace)
    # Never over metrics of a later seq that another process stored meanwhile.
    Trace.objects.filter(pk=trace.pk, computed_metrics_seq__lte=trace.seq).update(
        computed_metrics=metrics, computed_metrics_seq=trace.seq, **facts
    )
    trace.computed_metrics, trace.computed_metrics_seq = metrics, trace.seq
    for name, value in facts.items():
        setattr(trace, name, value)
    return metrics


def do_refresh_metrics(project_id: int | None = None) -> int:
    """Recompute the computed metrics and list facts of every trace (of `project_id`), one at a
    time (each reads its own rows); how many."""
    ids = Trace.objects.filter(**({"project_id": project_id} if project_id is not None else {}))
    done = 0
    for pk in ids.order_by("pk").values_list("pk", flat=True).iterator():
        trace = Trace.objects.filter(pk=pk).first()
        if trace is None:  # deleted meanwhile
            continue
        trace.computed_metrics_seq = -1
        get_computed_metrics(trace)
        done += 1
    return done


def list_facts(core_trace: core.Trace | None) -> dict[str, Any]:
    """The trace list's facts of a trace (Trace.model_names ... unknown_models; prices.py)."""
    if core_trace is None:
        return {"model_names": "", "error_count": 0, "cost_usd": None, "cost_estimated": False, "unknown_models": ""}
    cost = prices.get_trace_cost(core_trace)
    names = f" {' '.join(m.replace(' ', '_') for m in cost.models)} " if cost.models else ""
    return {
        "model_names": names[:500],
        "error_count": prices.error_count(core_trace.events),
        "cost_usd": cost.usd,
        "cost_estimated": cost.estimated,
        "unknown_models": " ".join(cost.unknown_models)[:300],
    }


# --- live metrics: recomputed by a worker while a trace streams, pushed on its socket ----------

#: How long a "recompute pending" flag lives when its task never runs (a lost broker message): the
#: next write after it asks again.
LIVE_METRICS_FLAG_S = 60


def _live_metrics_flag(trace_id: int) -> str:
    return f"swarmscope:live-metrics:{trace_id}"


def request_live_metrics(trace_id: int) -> bool:
    """After a live write to trace `trace_id` commits: have a worker recompute its metrics and push
    them to its viewers (`do_publish_metrics`) SWARMSCOPE_LIVE_METRICS_S seconds from now, unless
    a recompute is already pending (a flag in the cache, shared by web processes and workers), so
    a streaming trace is recomputed at most once per that period and always once after its last
    write. Returns whether a task was sent; never raises (the metrics are recomputed on the next
    write or read). Without a broker (CELERY_TASK_ALWAYS_EAGER, where a task would run inside the
    request, once per batch) nothing is sent: viewers see the metrics of their snapshot, as a reload.
    """
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return False
    flag = _live_metrics_flag(trace_id)
    try:
        if not cache.add(flag, 1, timeout=LIVE_METRICS_FLAG_S):
            return False
    except Exception:  # noqa: BLE001 - a cache that is down must not fail a committed write
        log.warning("could not set the live-metrics flag of trace %s", trace_id, exc_info=True)
        return False
    sent = enqueue("webapp.traces.tasks.publish_metrics", trace_id, countdown=settings.SWARMSCOPE_LIVE_METRICS_S)
    if not sent:
        try:
            cache.delete(flag)
        except Exception:  # noqa: BLE001 - the flag then expires after LIVE_METRICS_FLAG_S
            log.warning("could not clear the live-metrics flag of trace %s", trace_id, exc_info=True)
    return sent


def metrics_message(trace: Trace) -> dict[str, Any]:
    """The trace socket's `{"type": "metrics", "seq": N, "computed_metrics": {...}}`: the metrics of
    swarmscope.metrics at the trace's seq N (computed now when the cache is older)."""
    metrics = get_computed_metrics(trace)
    return {"type": "metrics", "seq": trace.seq, "computed_metrics": metrics}


def get_cached_metrics_message(trace_id: int, newer_than: int) -> dict[str, Any] | None:
    """The metrics message of the metrics cached on the trace row when they are of a seq above
    `newer_than` (what a socket sends after a resume), else None. One indexed read."""
    row = Trace.objects.filter(pk=trace_id, computed_metrics_seq__gt=newer_than).values_list(
        "computed_metrics_seq", "computed_metrics"
    )
    found = row.first()
    if found is None or not found[1]:
        return None
    return {"type": "metrics", "seq": found[0], "computed_metrics": found[1]}


def do_publish_metrics(trace_id: int) -> dict[str, Any] | None:
    """Recompute the metrics of trace `trace_id` at its current seq, cache them on the row and send
    them to its viewers (webapp.web.broadcast.broadcast_trace_metrics); the message, or None for a
    trace that is gone. Clears the pending flag first, so a write committing during the
    computation asks for another one."""
    cache.delete(_live_metrics_flag(trace_id))
    trace = Trace.objects.filter(pk=trace_id).first()
    if trace is None:
        return None
    message = metrics_message(trace)
    broadcast_trace_metrics(trace.pk, message)
    return message


#: The trace list's sortable columns: `sort=<key>` ascending, `sort=-<key>` descending.
LIST_SORTS = {
    "name": "name",
    "created": "created_at",
    "events": "event_count",
    "agents": "agent_count",
    "tokens": "total_tokens",
    "duration": "duration_s",
    "reward": "reward",
}
DEFAULT_SORT = "-created"
#: `outcome=`: a positive reward or `is_correct` true; a zero/negative reward or `is_correct` false; neither.
OUTCOMES = ("success", "failure", "none")
#: The most values one facet lists (its most frequent), so facet counts stay bounded.
FACET_LIMIT = 12
#: Kinds listed when the URL names none: derived traces (branches, episodes) are hidden.
DEFAULT_KINDS = (Trace.IMPORTED, Trace.STREAMED)


#: Range filters of the list: query parameter -> (Trace column, bound): durations in seconds,
#: measured tokens, cost in USD; a bound includes its value.
RANGE_PARAMS = {
    "dur_min": ("duration_s", "gte"),
    "dur_max": ("duration_s", "lte"),
    "tok_min": ("total_tokens", "gte"),
    "tok_max": ("total_tokens", "lte"),
    "cost_min": ("cost_usd", "gte"),
    "cost_max": ("cost_usd", "lte"),
}


def _number_param(raw: str) -> str:
    """A range bound as given when it is a finite number >= 0 (`1.5`, `2e3`), else "" (dropped)."""
    try:
        value = float(raw)
    except ValueError:
        return ""
    return raw if math.isfinite(value) and value >= 0 and len(raw) <= 32 else ""


def _date_param(raw: str) -> str:
    """A day `YYYY-MM-DD` as given when it is one, else "" (dropped)."""
    try:
        return date.fromisoformat(raw).isoformat() if len(raw) == 10 else ""
    except ValueError:
        return ""


def _filter_problems(one: Callable[[str], str], many: Callable[[str], tuple[str, ...]], kept: ListFilters):
    """What the list cannot apply of the asked filters (`one`/`many` read the raw parameters, `kept`
    is what from_query kept): (parameter, message naming the value and what was expected), in
    the order of the form. Bounds that exclude each other are named too: no trace could match."""
    problems: list[tuple[str, str]] = []

    def shown(raw: str) -> str:
        return repr(raw if len(raw) <= 40 else raw[:40] + "…")

    for name in ("after", "before"):
        if one(name) and not getattr(kept, name):
            problems.append((name, f"{shown(one(name))} is not a day (YYYY-MM-DD): not applied"))
    if kept.after and kept.before and kept.after > kept.before:
        problems.append(("before", f"{kept.before} is before {kept.after}: no trace can match"))
    for name in RANGE_PARAMS:
        if one(name) and not getattr(kept, name):
            problems.append((name, f"{shown(one(name))} is not a number ≥ 0: not applied"))
    for low, high in (("dur_min", "dur_max"), ("tok_min", "tok_max"), ("cost_min", "cost_max")):
        if getattr(kept, low) and getattr(kept, high) and float(getattr(kept, low)) > float(getattr(kept, high)):
            problems.append(
                (
                    high,
                    f"the maximum {getattr(kept, high)} is below the minimum {getattr(kept, low)}: no trace can match",
                )
            )
    choices = {  # parameter -> (is the value known, what is expected)
        "label": (("yes", "no").__contains__, "yes or no"),
        "errors": (("yes", "no").__contains__, "yes or no"),
        "outcome": (OUTCOMES.__contains__, ", ".join(OUTCOMES)),
        "kind": (Trace.KINDS.__contains__, ", ".join(Trace.KINDS)),
        "sort": (lambda v: v.lstrip("-") in LIST_SORTS, ", ".join(LIST_SORTS) + " (- first: descending)"),
    }
    for name, (known, expected) in choices.items():
        for raw in many(name) if name == "kind" else (one(name),):
            if raw and not known(raw):
                problems.append((name, f"{name} {shown(raw)} is not one of {expected}: not applied"))
    return tuple(problems)


@dataclass(frozen=True)
class ListFilters:
    """The trace list's filters and order, each a query parameter (a saved filter is its URL):
    `q` (text), `session`, `format`/`system`/`kind`/`project` (repeatable), `label` (yes/no),
    `outcome` (OUTCOMES), `from` (a derived trace's `derived_from`), `sort` (LIST_SORTS, `-` first
    for descending), `model` (repeatable: a model its events name), `errors` (yes/no: events with an
    error status), `after`/`before` (days `YYYY-MM-DD`, created on or after / on or before, UTC) and
    the RANGE_PARAMS bounds. Unknown or malformed values are dropped, and `problems` says which:
    (parameter, message) for the page to show beside that filter (`_filter_problems`)."""

    query: str = ""
    session: str = ""
    formats: tuple[str, ...] = ()
    systems: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    projects: tuple[int, ...] = ()
    label: str = ""
    outcome: str = ""
    derived_from: str = ""
    sort: str = DEFAULT_SORT
    models: tuple[str, ...] = ()
    errors: str = ""
    after: str = ""
    before: str = ""
    dur_min: str = ""
    dur_max: str = ""
    tok_min: str = ""
    tok_max: str = ""
    cost_min: str = ""
    cost_max: str = ""
    problems: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @classmethod
    def from_query(cls, params) -> ListFilters:
        """From a QueryDict (or a dict of lists/strings)."""

        def many(name: str) -> tuple[str, ...]:
            raw = params.getlist(name) if hasattr(params, "getlist") else params.get(name, [])
            values = [raw] if isinstance(raw, str) else list(raw)
            return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))

        def one(name: str) -> str:
            values = many(name)
            return values[-1] if values else ""

        sort = one("sort")
        kept = cls(
            query=one("q"),
            session=one("session"),
            formats=many("format"),
            systems=many("system"),
            kinds=tuple(k for k in many("kind") if k in Trace.KINDS),
            projects=tuple(i for i in map(id_or_none, many("project")) if i is not None),
            label=one("label") if one("label") in ("yes", "no") else "",
            outcome=one("outcome") if one("outcome") in OUTCOMES else "",
            derived_from=one("from")[:64],
            sort=sort if sort.lstrip("-") in LIST_SORTS else DEFAULT_SORT,
            models=tuple(m[:200] for m in many("model")),
            errors=one("errors") if one("errors") in ("yes", "no") else "",
            after=_date_param(one("after")),
            before=_date_param(one("before")),
            **{name: _number_param(one(name)) for name in RANGE_PARAMS},
        )
        return replace(kept, problems=_filter_problems(one, many, kept))

    def params(self) -> list[tuple[str, str]]:
        """The query parameters of these filters (defaults left out), in a stable order."""
        pairs = [("q", self.query), ("session", self.session)]
        pairs += [("format", v) for v in self.formats] + [("system", v) for v in self.systems]
        pairs += [("kind", v) for v in self.kinds] + [("project", str(v)) for v in self.projects]
        pairs += [("label", self.label), ("outcome", self.outcome), ("from", self.derived_from)]
        pairs += [("model", v) for v in self.models] + [("errors", self.errors)]
        pairs += [("after", self.after), ("before", self.before)]
        pairs += [(name, getattr(self, name)) for name in RANGE_PARAMS]
        pairs.append(("sort", "" if self.sort == DEFAULT_SORT else self.sort))
        return [(k, v) for k, v in pairs if v]

    def urlencode(self) -> str:
        return urlencode(self.params())

    def toggled(self, name: str, value) -> ListFilters:
        """These filters with `value` of the facet `name` ("formats", "kinds", "label", ...) switched."""
        current = getattr(self, name)
        if isinstance(current, tuple):
            return replace(
                self, **{name: tuple(v for v in current if v != value) if value in current else current + (value,)}
            )
        return replace(self, **{name: "" if current == value else value})

    @property
    def active(self) -> bool:
        """Whether anything narrows the list (the sort does not)."""
        return bool([p for p in self.params() if p[0] != "sort"])

    @property
    def shown_kinds(self) -> tuple[str, ...]:
        return self.kinds or (() if self.derived_from else DEFAULT_KINDS)

    def order_by(self) -> tuple[str, ...]:
        key = self.sort.lstrip("-")
        column = LIST_SORTS[key]
        nullable = key in ("reward", "tokens")  # traces without a reward or measured tokens come last
        if self.sort.startswith("-"):
            return (F(column).desc(nulls_last=True), "-id") if nullable else ("-" + column, "-id")
        return (F(column).asc(nulls_last=True), "id") if nullable else (column, "id")


def _outcome_q(outcome: str) -> Q:
    return Q(outcome="" if outcome == "none" else outcome)


def _content_q(query: str) -> Q:
    """Traces with an event whose content or tool holds every word of `query` (search.py)."""
    found = search.matching_traces_sql(query)
    return Q(pk__in=RawSQL(*found)) if found else Q(pk__in=[])


def _facts_q(filters: ListFilters, without: str) -> Q:
    """The model, errors, creation-day and RANGE_PARAMS filters (the model or errors facet left out
    when `without` names it)."""
    q = Q()
    if filters.models and without != "models":
        named = Q()
        for name in filters.models:
            named |= Q(model_names__contains=f" {name.replace(' ', '_')} ")
        q &= named
    if filters.errors and without != "errors":
        q &= Q(error_count__gt=0) if filters.errors == "yes" else Q(error_count=0)
    if filters.after:
        q &= Q(created_at__gte=datetime.combine(date.fromisoformat(filters.after), time.min, UTC))
    if filters.before:
        day_after = date.fromisoformat(filters.before) + timedelta(days=1)
        q &= Q(created_at__lt=datetime.combine(day_after, time.min, UTC))
    for name, (column, bound) in RANGE_PARAMS.items():
        if getattr(filters, name):
            q &= Q(**{f"{column}__{bound}": float(getattr(filters, name))})
    return q


def _filtered(project_ids: list[int], filters: ListFilters, *, without: str = ""):
    """The traces of `project_ids` passing every filter but the facet `without` (for its counts)."""
    projects = (
        [p for p in filters.projects if p in project_ids] if filters.projects and without != "projects" else project_ids
    )
    qs = Trace.objects.filter(project_id__in=projects)
    if without != "kinds":
        qs = qs.filter(kind__in=filters.shown_kinds) if filters.shown_kinds else qs
    if filters.session:
        qs = qs.filter(session_id=filters.session)
    if filters.formats and without != "formats":
        qs = qs.filter(source_format__in=filters.formats)
    if filters.systems and without != "systems":
        qs = qs.filter(system__in=filters.systems)
    if filters.label and without != "label":
        qs = qs.exclude(label_summary="") if filters.label == "yes" else qs.filter(label_summary="")
    if filters.outcome and without != "outcome":
        qs = qs.filter(_outcome_q(filters.outcome))
    if filters.derived_from and without != "derived_from":
        qs = qs.filter(derived_from=filters.derived_from)
    qs = qs.filter(_facts_q(filters, without))
    if filters.query:
        query = filters.query
        qs = qs.filter(
            Q(name__icontains=query)
            | Q(system__icontains=query)
            | Q(label_summary__icontains=query)
            | Q(source_format__icontains=query)
            | Q(session_id=query)
            | _content_q(query)
        )
    return qs


def list_traces(
    project_ids: Iterable[int],
    *,
    query: str = "",
    session: str = "",
    projects: Iterable[int] = (),
    order: str = "-created_at",
    filters: ListFilters | None = None,
):
    """Traces of the given projects, filtered and ordered by `filters` (ListFilters; derived traces
    hidden unless it names their kind). Without `filters`: every kind, newest first, filtered by
    name/system/label text, by session id (exact) and to `projects` (those of them in
    `project_ids`: none there, no traces) — the API's list."""
    project_ids = list(project_ids)
    if filters is not None:
        return _filtered(project_ids, filters).order_by(*filters.order_by())
    chosen = ListFilters(query=query, session=session, kinds=Trace.KINDS, projects=tuple(projects))
    qs = _filtered(project_ids, chosen)
    return qs.order_by(order, "-id")


def _grouped(qs, column: str, limit: int = FACET_LIMIT) -> list[tuple[Any, int]]:
    rows = qs.order_by().values_list(column).annotate(n=Count("id")).order_by("-n", column)[:limit]
    return [(value, n) for value, n in rows]


def _top(counter, limit: int = FACET_LIMIT) -> list[tuple[Any, int]]:
    """The `limit` most frequent values with their counts, ties by value (as _grouped orders them)."""
    return sorted(((v, n) for v, n in counter.items() if n), key=lambda vn: (-vn[1], str(vn[0])))[:limit]


def list_facets(
    project_ids: Iterable[int], filters: ListFilters, counts: facets.FacetCounts | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Each facet's values with their counts under the other filters (a facet's own selection does
    not narrow its counts), most frequent first, at most FACET_LIMIT each, from `counts`
    (webapp.traces.facets.facet_counts: one read of the maintained counts table, or one GROUP BY
    with a search, session or derived-from filter; computed here when not given). The derived-from
    facet is its own GROUP BY over derived traces. Each value: {"value", "label", "count",
    "selected", "query"} (`query`: the list's parameters with the value toggled)."""
    project_ids = list(project_ids)
    counts = counts if counts is not None else facets.facet_counts(project_ids, filters)
    by = counts.by_facet

    def entries(name: str, counted: list[tuple[Any, int]], selected, labels=None) -> list[dict[str, Any]]:
        found = {value for value, _ in counted}
        counted = counted + [
            (v, 0) for v in (selected if isinstance(selected, tuple) else (selected,)) if v and v not in found
        ]
        return [
            {
                "value": value,
                "label": (labels or {}).get(value, value) if value != "" else "(none)",
                "count": n,
                "selected": value in selected if isinstance(selected, tuple) else value == selected,
                "query": filters.toggled(name, value).urlencode(),
            }
            for value, n in counted
        ]

    kinds_selected = filters.kinds or ()
    result: dict[str, list[dict[str, Any]]] = {
        "kinds": [
            {
                "value": kind,
                "label": KIND_LABELS[kind],
                "count": by["kinds"].get(kind, 0),
                "selected": kind in kinds_selected,
                "shown": kind in filters.shown_kinds,
                "query": filters.toggled("kinds", kind).urlencode(),
            }
            for kind in Trace.KINDS
        ],
        "formats": entries("formats", _top(by["formats"]), filters.formats),
        "systems": entries("systems", _top(by["systems"]), filters.systems),
    }
    if len(project_ids) > 1 or filters.projects:  # a chosen project shows, to be cleared, even if it is the only one
        names = dict(Project.objects.filter(pk__in=project_ids).values_list("pk", "name"))
        result["projects"] = entries("projects", _top(by["projects"]), filters.projects, names)
    result["label"] = entries(
        "label",
        [("yes", by["label"].get("yes", 0)), ("no", by["label"].get("no", 0))],
        filters.label,
        {"yes": "labelled", "no": "no labels"},
    )
    outcomes = {o: by["outcome"].get("" if o == "none" else o, 0) for o in OUTCOMES}
    result["outcome"] = entries(
        "outcome",
        [(o, outcomes[o]) for o in OUTCOMES],
        filters.outcome,
        {"success": "success", "failure": "failure", "none": "no outcome"},
    )
    if any(k in Trace.DERIVED_KINDS for k in filters.shown_kinds) or filters.derived_from:
        # only derived traces have a derived_from: the (project, derived_from) index skips the rest
        derived = _filtered(project_ids, filters, without="derived_from").exclude(derived_from="")
        parents = _grouped(derived, "derived_from")
        labels = {v: derived_label(v) for v in [v for v, _ in parents] + [filters.derived_from]}
        result["derived_from"] = entries("derived_from", parents, filters.derived_from, labels)
    # the models and errors facets: one GROUP BY each over the list under the other filters
    models: Counter[str] = Counter()
    for names, n in _grouped(_filtered(project_ids, filters, without="models"), "model_names", limit=4 * FACET_LIMIT):
        for name in names.split():
            models[name] += n
    result["models"] = entries("models", _top(models), filters.models)
    with_errors = dict(
        _filtered(project_ids, filters, without="errors")
        .order_by()
        .annotate(failed=Q(error_count__gt=0))
        .values_list("failed")
        .annotate(n=Count("id"))
        .values_list("failed", "n")
    )
    result["errors"] = entries(
        "errors",
        [("yes", with_errors.get(True, 0)), ("no", with_errors.get(False, 0))],
        filters.errors,
        {"yes": "with errors", "no": "without errors"},
    )
    for name in ("formats", "systems", "label", "outcome", "models", "errors"):
        result[name] = [e for e in result[name] if e["count"] or e["selected"]]
    return result


KIND_LABELS = {
    Trace.IMPORTED: "imported",
    Trace.STREAMED: "streamed",
    Trace.BRANCH: "branch",
    Trace.EPISODE: "training episode",
}


def derived_label(derived_from: str) -> str:
    """'trace:12' -> 'branches of trace 12', 'run:3' -> 'episodes of run 3'."""
    kind, _, pk = derived_from.partition(":")
    return {"trace": f"branches of trace {pk}", "run": f"episodes of run {pk}"}.get(kind, derived_from)


def get_project_trace_counts(project_id: int) -> tuple[int, dict[str, int]]:
    """What one project's trace list (`/?project=<id>`) counts by default: (the traces it shows,
    {kind: count} of the derived kinds it hides unless asked for), from one read of the facet
    counts (facets.facet_counts), as that list counts them."""
    filters = ListFilters(projects=(project_id,))
    counts = facets.facet_counts([project_id], filters)
    hidden = {kind: n for kind, n in counts.by_facet["kinds"].items() if n and kind not in filters.shown_kinds}
    return counts.total, hidden


def derived_counts(traces: Iterable[Trace]) -> dict[int, dict[str, int]]:
    """For each of `traces` with derived traces: {trace id: {kind: count}} (one indexed GROUP BY on
    `derived_from` over the page's ids)."""
    keys = {f"trace:{t.pk}": t.pk for t in traces}
    counts: dict[int, dict[str, int]] = {}
    if not keys:
        return counts
    rows = (
        Trace.objects.filter(derived_from__in=list(keys))
        .order_by()
        .values_list("derived_from", "kind")
        .annotate(n=Count("id"))
    )
    for derived_from, kind, n in rows:
        counts.setdefault(keys[derived_from], {})[kind] = n
    return counts


# --- the live trace list (webapp.traces.list_consumer) -----------------------------------------


def list_seq_of(moment: datetime | None) -> int:
    """The trace list's sequence number of a trace row last saved at `moment`: microseconds since
    the epoch of its `updated_at` (increasing with the saves of a project's traces, with holes)."""
    return int(moment.timestamp() * 1_000_000) if moment else 0


def list_seq(project_id: int) -> int:
    """The project's trace-list seq now: the current microsecond (every later save of a trace of
    the project gets a higher one; no query)."""
    return list_seq_of(timezone.now())


def list_row(trace: Trace) -> dict[str, Any]:
    """One trace as the live list sends it: the columns of the list, `live` with the seconds it
    stays live without new events (`live_for_s`), the trace's own `seq` (a client keeps the
    newest row of a trace) and the list seq of this save (`list_seq`)."""
    live_for = 0.0
    if trace.last_event_at:
        live_for = max(0.0, LIVE_WINDOW_S - (timezone.now() - trace.last_event_at).total_seconds())
    return {
        "id": trace.pk,
        "project": trace.project_id,
        "name": trace.name or trace.identity_key,
        "system": trace.system,
        "source_format": trace.source_format,
        "kind": trace.kind,
        "derived_from": trace.derived_from,
        "session_id": trace.session_id,
        "seq": trace.seq,
        "list_seq": list_seq_of(trace.updated_at),
        "event_count": trace.event_count,
        "agent_count": trace.agent_count,
        "total_tokens": trace.total_tokens,
        "estimated_tokens": trace.estimated_tokens,
        "duration_s": trace.duration_s,
        "synthetic_time": bool(isinstance(trace.attributes, dict) and trace.attributes.get("synthetic_time")),
        "reward": trace.reward,
        "labels": trace.label_summary,
        "live": live_for > 0,
        "live_for_s": round(live_for, 1),
        "created_at": trace.created_at.isoformat() if trace.created_at else None,
    }


#: The most rows one trace-list delta carries (a resume after a long gap: the newest ones).
MAX_LIST_ROWS = 200
#: A resume re-sends rows saved this long before the seq asked for: saves of two traces commit in
#: any order, and a row is an idempotent upsert for the client.
LIST_RESUME_MARGIN_US = 2_000_000


def list_delta(trace: Trace) -> dict[str, Any]:
    """The trace-list delta of one saved trace row."""
    row = list_row(trace)
    return {"type": "delta", "seq": row["list_seq"], "project": trace.project_id, "traces": [row]}


def list_snapshot(project_id: int) -> dict[str, Any]:
    """The trace list's snapshot: the project's seq and its live traces (the page itself is HTML)."""
    since = timezone.now() - timedelta(seconds=LIVE_WINDOW_S)
    rows = Trace.objects.filter(project_id=project_id, last_event_at__gte=since).order_by("-updated_at")[:MAX_LIST_ROWS]
    return {
        "type": "snapshot",
        "seq": list_seq(project_id),
        "project": project_id,
        "traces": [list_row(t) for t in rows],
    }


def list_delta_since(project_id: int, seq: int) -> dict[str, Any]:
    """The rows of the project's traces saved after list seq `seq` (a little before, see
    LIST_RESUME_MARGIN_US), newest MAX_LIST_ROWS, oldest first."""
    after = datetime.fromtimestamp(max(0, seq - LIST_RESUME_MARGIN_US) / 1_000_000, tz=UTC)
    rows = list(
        Trace.objects.filter(project_id=project_id, updated_at__gt=after).order_by("-updated_at")[:MAX_LIST_ROWS]
    )
    rows.reverse()
    current = max([list_seq_of(t.updated_at) for t in rows] + [seq])
    return {"type": "delta", "seq": current, "project": project_id, "traces": [list_row(t) for t in rows]}


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
