"""Server-side level of detail for huge traces: an overview, then the events of a window.

A trace with more than `settings.SWARMSCOPE_LOD_EVENTS` events (default 50,000) is too big to send
whole to a browser. Its page instead loads an *overview snapshot* (`get_lod_snapshot`: the trace,
its agents and labels, no events or edges, and `trace.lod.overview`), draws the overview's time bins,
and fetches the events of the visible time window and lanes once the window holds few enough
(`get_window`). Search runs here too (`search_events`), so a hit anywhere can be jumped to.

Lanes: one per agent up to MAX_LANES agents; above that they are grouped by role (when the roles
are at most MAX_LANES), else by parent (the spawning agent; roots under ROOT_LANE).

The overview is one grouped SQL query over `(trace, t)` (index `event_trace_t`, migration
0008_event_time_index) as of the trace's seq. Live deltas of a huge trace add their events to the
overview's counts on the client, on the snapshot's bin grid (static/js/model/server_window.js), and
to its event store only when inside the loaded window: the store holds exactly the events fetched.

HTTP (access as every trace API: the caller's projects, unknown and foreign traces 404; a bad
parameter answers 400 naming it in `field`):

* `GET /api/traces/<id>/snapshot/lod/`: the overview snapshot when the trace is huge, else the
  full snapshot (services.get_snapshot): what the trace page loads.
* `GET /api/traces/<id>/overview/?bins=N`: the overview alone.
* `GET /api/traces/<id>/window/?t0=&t1=&lanes=&limit=`: events in a window, with their edges.
* `GET /api/traces/<id>/search/?q=&limit=`: ids and times of matching events.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, F, Max, Min, Q
from django.db.models.functions import Floor
from django.http import HttpRequest, JsonResponse

from webapp.web.api import api_view, json_error
from webapp.web.validation import InputError, query_int

from . import services
from .api import get_trace
from .models import Agent, Edge, Event, Label, Trace

#: Above this many agents the overview groups lanes (by role, else by parent).
MAX_LANES = 150
#: The lane of the agents without a parent when lanes are grouped by parent.
ROOT_LANE = "(root)"
#: The lane of the agents without a role when lanes are grouped by role.
NO_ROLE_LANE = "(no role)"
DEFAULT_BINS = 200
MAX_BINS = 2000
#: Events a window answer holds at most (`limit`), and by default.
MAX_WINDOW_LIMIT = 10_000
DEFAULT_WINDOW_LIMIT = 5000
MAX_SEARCH_LIMIT = 1000
DEFAULT_SEARCH_LIMIT = 200
#: Longest search text, in characters.
MAX_QUERY_CHARS = 200
#: Seconds an overview stays cached (keyed by trace, seq and bins: a new batch makes a new key).
OVERVIEW_CACHE_S = 3600


def lod_threshold() -> int:
    """Events above which a trace gets the server-side level of detail (SWARMSCOPE_LOD_EVENTS)."""
    return int(getattr(settings, "SWARMSCOPE_LOD_EVENTS", 50_000))


def is_huge(trace: Trace) -> bool:
    """Whether `trace` has more events than `lod_threshold()` (its page loads an overview)."""
    return trace.event_count > lod_threshold()


# --- lanes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lanes:
    """How agents map to overview lanes: `by` is "agent", "role" or "parent"; `lane_of` maps an
    agent name to its lane name; `names` lists the lanes in agent order (first member first)."""

    by: str
    lane_of: dict[str, str]
    names: list[str]

    def lane(self, agent: str) -> str:
        """The lane of `agent`; an agent without an Agent row is its own lane (by agent or parent)
        or NO_ROLE_LANE (by role)."""
        if agent in self.lane_of:
            return self.lane_of[agent]
        return NO_ROLE_LANE if self.by == "role" else agent

    def agents_of(self, lanes: list[str]) -> list[str]:
        """The known agents in `lanes` (lane names; an unknown name matches an agent of that name)."""
        wanted = set(lanes)
        agents = [a for a, lane in self.lane_of.items() if lane in wanted]
        return agents + [name for name in lanes if name not in self.lane_of and self.by != "role"]


def get_lanes(trace: Trace, max_lanes: int | None = None) -> Lanes:
    """The overview lanes of `trace`: one per agent up to `max_lanes` (default MAX_LANES) agents,
    else grouped by role when there are at most `max_lanes` roles, else by parent."""
    max_lanes = MAX_LANES if max_lanes is None else max_lanes
    rows = list(Agent.objects.filter(trace=trace).order_by("id").values_list("name", "role", "parent"))
    if len(rows) <= max_lanes:
        lane_of = {name: name for name, _, _ in rows}
        by = "agent"
    elif len({role for _, role, _ in rows}) <= max_lanes:
        lane_of = {name: role or NO_ROLE_LANE for name, role, _ in rows}
        by = "role"
    else:
        lane_of = {name: parent or ROOT_LANE for name, _, parent in rows}
        by = "parent"
    return Lanes(by, lane_of, list(dict.fromkeys(lane_of.values())))


# --- reads -------------------------------------------------------------------------------------


def get_overview(trace: Trace, bins: int = DEFAULT_BINS, *, reread: bool = True) -> dict[str, Any]:
    """Per-lane time-binned event counts of `trace` as of its seq.

    Bin i covers [t0 + i·width, t0 + (i+1)·width), width = (t1 − t0) / bins (1 s when all events
    share one time); the last bin also holds t1. Returns `{"seq", "event_count", "t0", "t1",
    "bins", "width", "grouped_by", "lanes": [{"name", "agents", "count", "cells"}]}`, `cells` the
    non-empty bins as `[bin, count, errors, {type: count}]` (errors: `attributes.status ==
    "error"`, as the importers mark failed tool results). Times in the trace's seconds. Cached
    per trace, seq and `bins` (OVERVIEW_CACHE_S): two grouped queries (counts by agent, bin and
    type; errors) on the covering index. `reread=False`: as of `trace.seq` as given.
    """
    if reread:
        trace = Trace.objects.get(pk=trace.pk)
    # created_at too: a test database (or a restored one) may give a new trace an old id.
    born = trace.created_at.timestamp() if trace.created_at else 0
    key = f"swarmscope:lod-overview:{trace.pk}:{born}:{trace.seq}:{trace.reset_seq}:{bins}"
    cached = cache.get(key)
    if cached is not None:
        return cached
    overview = _compute_overview(trace, bins)
    cache.set(key, overview, OVERVIEW_CACHE_S)
    return overview


def _compute_overview(trace: Trace, bins: int) -> dict[str, Any]:
    # `seq + 0`: the seq bound (staged rows have seq > trace.seq) without its index, so the scan
    # runs on the covering index (trace_id, t, agent, type, seq) alone, never on the event rows.
    with transaction.atomic():
        events = Event.objects.alias(published=F("seq") + 0).filter(trace=trace, published__lte=trace.seq)
        span = events.aggregate(t0=Min("t"), t1=Max("t"))
        t0, t1 = span["t0"], span["t1"]
        lanes = get_lanes(trace)
        rows: list[tuple[str, float, str, int]] = []
        errors: list[tuple[str, float, int]] = []
        width = 1.0
        if t0 is not None:
            width = (t1 - t0) / bins if t1 > t0 else 1.0
            binned = events.annotate(bin=Floor((F("t") - t0) / width))
            rows = list(binned.values_list("agent", "bin", "type").annotate(n=Count("id")).order_by())
            errors = list(
                binned.filter(attributes__status="error").values_list("agent", "bin").annotate(n=Count("id")).order_by()
            )
    cells: dict[str, dict[int, list[Any]]] = {}
    totals: dict[str, int] = {}

    def cell_of(agent: str, bin_: float) -> tuple[str, list[Any]]:
        lane = lanes.lane(agent)
        index = min(int(bin_), bins - 1)
        return lane, cells.setdefault(lane, {}).setdefault(index, [index, 0, 0, {}])

    for agent, bin_, type_, n in rows:
        lane, cell = cell_of(agent, bin_)
        cell[1] += n
        cell[3][type_] = cell[3].get(type_, 0) + n
        totals[lane] = totals.get(lane, 0) + n
    for agent, bin_, n in errors:
        cell_of(agent, bin_)[1][2] += n
    names = lanes.names + sorted(set(cells) - set(lanes.names))
    members: dict[str, list[str]] = {}
    for agent, lane in lanes.lane_of.items():
        members.setdefault(lane, []).append(agent)
    return {
        "seq": trace.seq,
        "event_count": sum(totals.values()),
        "t0": t0 if t0 is not None else 0.0,
        "t1": t1 if t1 is not None else 0.0,
        "bins": bins,
        "width": width,
        "grouped_by": lanes.by,
        "lanes": [
            {
                "name": name,
                "agents": members.get(name, [name] if lanes.by != "role" else []),
                "count": totals.get(name, 0),
                "cells": [cells[name][i] for i in sorted(cells.get(name, {}))],
            }
            for name in names
        ],
    }


def get_lod_snapshot(trace: Trace, bins: int = DEFAULT_BINS) -> dict[str, Any]:
    """The overview snapshot of a huge trace: the live protocol's snapshot (swarmscope.protocol)
    with its agents and labels but no events or edges, and `trace.lod = {"threshold", "overview"}`
    (`get_overview`). Its client holds exactly the events it fetches by window afterwards."""
    with transaction.atomic():
        trace = Trace.objects.get(pk=trace.pk)
        agents = list(
            Agent.objects.filter(trace=trace, seq__lte=trace.seq).order_by("id").values(*services.AGENT_COLUMNS, "seq")
        )
        labels = [
            services.label_wire(r)
            for r in Label.objects.filter(trace=trace, seq__lte=trace.seq)
            .order_by("id")
            .values(*services.LABEL_COLUMNS)
        ]
        overview = get_overview(trace, bins, reread=False)
    summary = services.trace_summary(trace)
    summary["computed_metrics"] = services.get_computed_metrics(trace)
    # In the trace summary (an open record of the protocol's schema), so a delta's summary, which
    # has no `lod`, leaves it in place on the client.
    summary["lod"] = {"threshold": lod_threshold(), "overview": overview}
    return {
        "type": "snapshot",
        "seq": trace.seq,
        "trace": summary,
        "agents": agents,
        "events": [],
        "edges": [],
        "labels": labels,
    }


def get_window(
    trace: Trace, t0: float, t1: float, lanes: list[str] | None = None, limit: int = DEFAULT_WINDOW_LIMIT
) -> dict[str, Any]:
    """The events of `trace` with t in [t0, t1] (seconds) in `lanes` (overview lane names; None:
    every lane), in time order, at most `limit`, with the dependency and other edges between them.

    Returns `{"seq", "t0", "t1", "lanes", "events": [wire events], "edges": [...], "truncated"}`;
    `truncated` is true when more than `limit` events matched (the first `limit` in time are sent).
    """
    with transaction.atomic():
        trace = Trace.objects.get(pk=trace.pk)
        query = Event.objects.filter(trace=trace, seq__lte=trace.seq, t__gte=t0, t__lte=t1)
        if lanes is not None:
            query = query.filter(agent__in=get_lanes(trace).agents_of(lanes))
        rows = list(query.order_by("t", "position").values(*services.EVENT_COLUMNS)[: limit + 1])
        truncated = len(rows) > limit
        rows = rows[:limit]
        ids = [r["event_id"] for r in rows]
        edges: list[dict[str, Any]] = []
        wanted = set(ids)
        for start in range(0, len(ids), 2000):  # bounded IN lists (SQLite's variable limit)
            chunk = ids[start : start + 2000]
            for edge in Edge.objects.filter(trace=trace, seq__lte=trace.seq, src__in=chunk).values(
                "src", "dst", "type", "seq"
            ):
                if edge["dst"] in wanted:
                    edges.append(edge)
    return {
        "seq": trace.seq,
        "t0": t0,
        "t1": t1,
        "lanes": lanes,
        "events": [services.event_wire(r) for r in rows],
        "edges": edges,
        "truncated": truncated,
    }


def search_events(trace: Trace, q: str, limit: int = DEFAULT_SEARCH_LIMIT) -> dict[str, Any]:
    """Events of `trace` whose content, tool, agent or type contains `q` (case-insensitive), or
    whose id is `q`, in time order: `{"seq", "q", "hits": [{"id", "t", "agent", "type"}],
    "truncated"}` with at most `limit` hits."""
    with transaction.atomic():
        trace = Trace.objects.get(pk=trace.pk)
        match = (
            Q(event_id=q)
            | Q(content__icontains=q)
            | Q(tool__icontains=q)
            | Q(agent__icontains=q)
            | Q(type__icontains=q)
        )
        rows = list(
            Event.objects.filter(match, trace=trace, seq__lte=trace.seq)
            .order_by("t", "position")
            .values_list("event_id", "t", "agent", "type")[: limit + 1]
        )
    return {
        "seq": trace.seq,
        "q": q,
        "hits": [{"id": i, "t": t, "agent": a, "type": ty} for i, t, a, ty in rows[:limit]],
        "truncated": len(rows) > limit,
    }


# --- HTTP --------------------------------------------------------------------------------------


def query_float(params: Any, name: str) -> float:
    """The required query parameter `name` as a finite number; InputError naming it otherwise."""
    value = params.get(name)
    if value is None or value == "":
        raise InputError("is required (a number of seconds)", field=name)
    try:
        number = float(value) if len(value) <= 64 else math.nan
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise InputError(f"must be a finite number; got {value[:64]!r}", field=name)
    return number


def _bins(request: HttpRequest) -> int:
    return query_int(request.GET, "bins", DEFAULT_BINS, low=1, high=MAX_BINS) or DEFAULT_BINS


def _answer(request: HttpRequest, trace_id: int, read: Callable[[Trace], dict[str, Any]]) -> JsonResponse:
    """`read(trace)` as JSON for a trace the caller may read (404 otherwise); a bad query
    parameter (InputError from `read`) is a 400 naming it."""
    trace = get_trace(request, trace_id)
    if trace is None:
        return json_error(404, "no such trace")
    try:
        return JsonResponse(read(trace))
    except InputError as exc:
        return json_error(400, exc.message, field=exc.field)


@api_view("GET")
def lod_snapshot(request: HttpRequest, trace_id: int):
    """`?bins=N`: the overview snapshot of a huge trace, else the full snapshot."""
    return _answer(
        request,
        trace_id,
        lambda trace: get_lod_snapshot(trace, _bins(request)) if is_huge(trace) else services.get_snapshot(trace),
    )


@api_view("GET")
def trace_overview(request: HttpRequest, trace_id: int):
    """`?bins=N` (1..MAX_BINS, default DEFAULT_BINS): `get_overview`."""
    return _answer(request, trace_id, lambda trace: get_overview(trace, _bins(request)))


@api_view("GET")
def trace_window(request: HttpRequest, trace_id: int):
    """`?t0=&t1=` (seconds, t0 <= t1), `lanes=a,b` (overview lane names, optional), `limit`
    (1..MAX_WINDOW_LIMIT): `get_window`."""

    def read(trace: Trace) -> dict[str, Any]:
        t0 = query_float(request.GET, "t0")
        t1 = query_float(request.GET, "t1")
        if t1 < t0:
            raise InputError(f"must be at least t0 ({t0}); got {t1}", field="t1")
        limit = query_int(request.GET, "limit", DEFAULT_WINDOW_LIMIT, low=1, high=MAX_WINDOW_LIMIT)
        raw = request.GET.get("lanes")
        lanes = [name for name in raw.split(",") if name] if raw else None
        return get_window(trace, t0, t1, lanes, limit or DEFAULT_WINDOW_LIMIT)

    return _answer(request, trace_id, read)


@api_view("GET")
def trace_search(request: HttpRequest, trace_id: int):
    """`?q=` (1..MAX_QUERY_CHARS characters), `limit` (1..MAX_SEARCH_LIMIT): `search_events`."""

    def read(trace: Trace) -> dict[str, Any]:
        q = request.GET.get("q", "").strip()
        if not q or len(q) > MAX_QUERY_CHARS:
            raise InputError(f"must be 1 to {MAX_QUERY_CHARS} characters", field="q")
        limit = query_int(request.GET, "limit", DEFAULT_SEARCH_LIMIT, low=1, high=MAX_SEARCH_LIMIT)
        return search_events(trace, q, limit or DEFAULT_SEARCH_LIMIT)

    return _answer(request, trace_id, read)
