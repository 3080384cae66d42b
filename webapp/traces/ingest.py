"""Batch ingest and file import: an import, an API batch and a derived OTLP trace all end in writes here.

`do_ingest` reads what is stored of a trace, asks `swarmscope.ingest.plan_batch` what a fragment
changes (the identity rules: a re-sent event is a no-op, one that adds `t_end` or attributes
merges, a contradicting one refuses the whole batch), writes the plan with bulk inserts under the
trace's next sequence number, and broadcasts one delta after commit (webapp.web.broadcast).
`do_import_sources` imports files, a trace at a time.

A plan adding at most SWARMSCOPE_INGEST_CHUNK_ROWS rows is written in one transaction. A bigger
one is staged: its new rows are committed in transactions of that many rows under the unpublished
seq (trace.seq + 1, which every reader bounds by: `services.get_snapshot`, `to_core_trace`), and
one last short transaction writes its merges into stored rows and publishes it (trace.seq,
counts); `Trace.staged_at` marks the staging meanwhile, so other writers of that trace wait
(TraceBusy) while other traces' writers interleave between the chunks. A batch that fails deletes
what it staged; one whose process died is deleted by the next writer of the trace after
SWARMSCOPE_INGEST_STAGE_TIMEOUT_S. Either way a reader sees all of a batch or none of it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from re import Pattern
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from swarmscope import model as core
from swarmscope.importers import DecompressionBudget, SourceFile, read_files
from swarmscope.importers.scores import is_score_label, missing_reward_score
from swarmscope.ingest import (
    AGENT_FILL_FIELDS,
    BatchPlan,
    IngestConflict,
    LabelKey,
    Stored,
    check_storable,
    label_key,
    plan_batch,
)
from swarmscope.redaction import compiled, redact_event, redact_trace
from swarmscope.tokens import event_usage, events_usage, reported_total
from webapp.accounts.models import Project
from webapp.web.broadcast import broadcast_trace_delta, broadcast_trace_list, broadcast_trace_seq
from webapp.web.jobs import enqueue

from .columns import check_columns
from .models import Agent, Edge, Event, Label, Trace
from .services import (
    AGENT_COLUMNS,
    EVENT_COLUMNS,
    EVENT_DATA_COLUMNS,
    agent_from_row,
    event_columns,
    event_from_row,
    list_delta,
    request_live_metrics,
    write_delta,
)

#: SQLite allows 32,766 bound variables; stay far below for `IN (...)` look-ups.
LOOKUP_CHUNK = 900
BULK_BATCH = 1000
#: Label keys shown in a trace's `label_summary` (the trace list's label column).
SUMMARY_LABELS = ("mistake_agent", "mistake_step", "failure_mode")
#: The columns a merged event can change (`model.merge_event` refuses a different t, type or agent).
_MERGED_EVENT_COLUMNS = tuple(c for c in EVENT_DATA_COLUMNS if c not in ("event_id", "t", "type", "agent"))


@dataclass
class IngestResult:
    """One write's outcome: the trace row as saved, its new `seq` (unchanged when nothing was new)
    and the counts of events inserted and merged; `wrote`: the write took a new seq (it may hold only
    agents, edges, labels or trace fields such as a reward)."""

    trace: Trace
    created: bool
    seq: int
    events_added: int
    events_updated: int
    rejected: int = 0  # OTLP spans refused (an id already stored with other content)
    wrote: bool = False

    @property
    def changed(self) -> bool:
        return self.created or self.wrote or self.events_added > 0 or self.events_updated > 0


class TraceBusy(Exception):
    """Another batch of the trace is being staged in chunks (HTTP 503 with Retry-After); nothing of
    this one is stored. `retry_after_s`: seconds to wait before sending it again."""

    def __init__(self, trace_id: int, retry_after_s: int):
        self.trace_id = trace_id
        self.retry_after_s = retry_after_s
        super().__init__(f"trace {trace_id} is taking a large batch in chunks; send again in {retry_after_s} s")


class StagingLost(Exception):
    """A staged batch's trace changed under it (deleted, or its staging given up after
    SWARMSCOPE_INGEST_STAGE_TIMEOUT_S and taken over); nothing of the batch is visible. HTTP 503."""


def fault_injection_point(stage: str, trace_id: int, chunk: int) -> None:
    """Fault injection: called by a staged batch after its chunk number `chunk` (from 0) commits
    (`stage` "chunk_committed"). Does nothing; tests replace it to fail or "crash" a batch between
    its transactions, or to wait there while other writers run."""


def redaction_patterns() -> list[Pattern[str]]:
    """SWARMSCOPE_REDACT_PATTERNS, compiled (swarmscope.redaction)."""
    return compiled(tuple(settings.SWARMSCOPE_REDACT_PATTERNS))


def do_ingest(
    project: Project,
    fragment: core.Trace,
    *,
    trace: Trace | None = None,
    live: bool = False,
    broadcast: bool = True,
    kind: str | None = None,
    derived_from: str = "",
) -> IngestResult:
    """Store `fragment` (a whole imported trace or an API batch) into its trace, all or nothing.

    The trace is `trace` when given, else found by the fragment's identity key in `project`, else
    created. Edges may name events stored by earlier batches. Raises IngestConflict (409) on a
    contradicting event and core.TraceValidationError (400) on an edge naming an unknown event or a
    NUL character (`check_storable`). `live` marks events as arriving from a running swarm (the
    trace shows a live badge). Content fields are redacted first by SWARMSCOPE_REDACT_PATTERNS.
    `kind` and `derived_from` (Trace.kind, Trace.derived_from) are set on a trace created now:
    `kind` defaults to "streamed" when `live`, else "imported"; the layers above that derive traces
    pass theirs ("branch", "episode").

    A plan of more than SWARMSCOPE_INGEST_CHUNK_ROWS new rows is staged in chunks (the module
    docstring); while one is, another batch of the same trace raises TraceBusy (503), and a staged
    batch whose trace is deleted meanwhile raises StagingLost (503). Nothing of a refused or failed
    batch is stored or visible.
    """
    check_storable(fragment)
    check_columns(fragment)
    fragment = _redact(fragment)
    kind = kind or (Trace.STREAMED if live else Trace.IMPORTED)
    for _attempt in range(3):
        abandoned: Staging | None = None
        # A big batch is planned before the write lock is taken (reads do not block writers), and
        # re-planned under it only when the trace changed in between.
        early = (
            _plan_early(project, fragment, trace)
            if _fragment_rows(fragment) > settings.SWARMSCOPE_INGEST_CHUNK_ROWS
            else None
        )
        with transaction.atomic():
            row, created = _find_or_create_trace(project, fragment, trace, kind, derived_from)
            if row.staged_at is not None:
                abandoned = abandoned_staging(row)  # raises TraceBusy while its writer may be alive
            else:
                if early is not None and early.still_valid(row, created):
                    stored, plan = early.stored, early.plan
                else:
                    stored = _StoredRows() if created else _read_stored(row, fragment)
                    plan = plan_batch(stored.state, fragment)
                if plan.empty and not created and not _changes_fields(row, fragment):
                    return IngestResult(row, False, row.seq, 0, 0)
                seq = row.seq + 1
                if staged_rows(plan) <= settings.SWARMSCOPE_INGEST_CHUNK_ROWS:
                    return _write_now(row, created, fragment, plan, stored, seq, live=live, broadcast=broadcast)
                staging = Staging.begin(row)
        if abandoned is None:
            return _write_staged(row, created, fragment, plan, stored, staging, live=live, broadcast=broadcast)
        discard_staged(abandoned)
    raise TraceBusy(row.pk, 1)


def _redact(fragment: core.Trace) -> core.Trace:
    """`redact_trace` by SWARMSCOPE_REDACT_PATTERNS: a big batch holds copies of its redacted events
    only (`redact_event` keeps every event it leaves equal). `fragment` is not changed."""
    patterns = redaction_patterns()
    if not patterns:
        return fragment
    rest = redact_trace(dataclasses.replace(fragment, events=[]), patterns)
    rest.events = [redact_event(event, patterns) for event in fragment.events]
    return rest


#: The trace-level fields a batch merges into the stored trace (as `_add_to_trace` does).
MERGED_FIELDS = ("rewards", "costs", "metrics", "attributes")


def _changes_fields(row: Trace, fragment: core.Trace) -> bool:
    """Whether merging the fragment's rewards, costs, metrics or attributes changes the stored
    trace: a batch of those alone (an episode's reward, reported at its end) is a write with its
    own seq and delta, not a no-op; one repeating the stored values is."""
    return any(
        getattr(fragment, name) and {**getattr(row, name), **getattr(fragment, name)} != getattr(row, name)
        for name in MERGED_FIELDS
    )


def _fragment_rows(fragment: core.Trace) -> int:
    return len(fragment.events) + len(fragment.edges) + len(fragment.agents) + len(fragment.labels)


@dataclass
class _EarlyPlan:
    """A plan made without the write lock against the trace as of `seq` (None: no trace yet)."""

    trace_id: int | None
    seq: int | None
    stored: _StoredRows
    plan: BatchPlan

    def still_valid(self, row: Trace, created: bool) -> bool:
        """Whether the locked `row` is the trace this plan read (every write moves its seq)."""
        if created:
            return self.trace_id is None
        return self.trace_id == row.pk and self.seq == row.seq


def _plan_early(project: Project, fragment: core.Trace, trace: Trace | None) -> _EarlyPlan | None:
    """Plan `fragment` against what is stored now, outside any transaction: the trace's seq is read
    first, so a write committed while the rows are read moves it and `still_valid` refuses the
    plan. None while the trace is staging another batch (the locked path answers that)."""
    qs = (
        Trace.objects.filter(pk=trace.pk)
        if trace is not None
        else Trace.objects.filter(project=project, identity_key=fragment.identity_key)
    )
    found = qs.first()
    if found is None:
        stored = _StoredRows()
        return _EarlyPlan(None, None, stored, plan_batch(stored.state, fragment))
    if found.staged_at is not None:
        return None
    stored = _read_stored(found, fragment)
    return _EarlyPlan(found.pk, found.seq, stored, plan_batch(stored.state, fragment))


def _write_now(
    row: Trace,
    created: bool,
    fragment: core.Trace,
    plan: BatchPlan,
    stored: _StoredRows,
    seq: int,
    *,
    live: bool,
    broadcast: bool,
) -> IngestResult:
    """Write `plan` under `seq` in the caller's transaction and broadcast its delta after commit."""
    _write_plan(row, plan, stored, seq)
    _add_to_trace(row, fragment, plan, stored, seq, merge_fields=not created, live=live)
    row.save()
    delta = write_delta(
        row, seq, plan.create_agents + plan.update_agents, plan.touched_events, plan.add_edges, plan.add_labels
    )
    if broadcast:
        transaction.on_commit(lambda: broadcast_trace_delta(row.pk, delta))
        transaction.on_commit(lambda: notify_trace_list(row))
        if live:  # a streaming trace's metrics, recomputed by a worker and pushed (debounced)
            transaction.on_commit(lambda: request_live_metrics(row.pk))
    return IngestResult(row, created, seq, len(plan.insert_events), len(plan.update_events), wrote=True)


def staged_rows(plan: BatchPlan) -> int:
    """The rows `plan` inserts (events, edges, agents, labels): what staging splits into chunks."""
    return len(plan.insert_events) + len(plan.add_edges) + len(plan.create_agents) + len(plan.add_labels)


# --- staged batches ----------------------------------------------------------------------------


@dataclass
class Staging:
    """A batch being staged into trace `trace_id`: its rows carry seq `published + 1`, unpublished
    while the trace row's seq is `published`; `token` is the trace's `staged_at` as last written by
    this writer (a compare-and-set: a writer that took over an abandoned staging has changed it)."""

    trace_id: int
    published: int
    token: datetime

    @classmethod
    def begin(cls, row: Trace) -> Staging:
        """Mark `row` (locked by the caller's transaction) as staging a batch."""
        row.staged_at = timezone.now()
        Trace.objects.filter(pk=row.pk).update(staged_at=row.staged_at)
        return cls(row.pk, row.seq, row.staged_at)

    def heartbeat(self) -> None:
        """Move `staged_at` to now (inside a transaction); raise StagingLost where the trace is gone
        or another writer holds its staging."""
        now = timezone.now()
        if not Trace.objects.filter(pk=self.trace_id, staged_at=self.token, seq=self.published).update(staged_at=now):
            raise StagingLost(f"trace {self.trace_id} was deleted or changed while a batch was staged into it")
        self.token = now


def abandoned_staging(row: Trace) -> Staging:
    """The staging of `row` when its writer has been silent for SWARMSCOPE_INGEST_STAGE_TIMEOUT_S;
    else raise TraceBusy with the seconds until then (at most 10)."""
    assert row.staged_at is not None
    age = (timezone.now() - row.staged_at).total_seconds()
    timeout = settings.SWARMSCOPE_INGEST_STAGE_TIMEOUT_S
    if age < timeout:
        raise TraceBusy(row.pk, max(1, min(10, math.ceil(timeout - age))))
    return Staging(row.pk, row.seq, row.staged_at)


def chunks(items: list[Any], size: int):
    for start in range(0, len(items), size):
        yield start, items[start : start + size]


def _stage(row: Trace, plan: BatchPlan, staging: Staging) -> None:
    """Commit the rows `plan` inserts, SWARMSCOPE_INGEST_CHUNK_ROWS per transaction, under the
    unpublished seq; events take positions after the published ones."""
    seq, size = staging.published + 1, max(1, settings.SWARMSCOPE_INGEST_CHUNK_ROWS)
    base = row.event_count

    def writes():
        """One callable per transaction; the rows of events and edges are built before it."""
        for start, part in chunks(plan.insert_events, size):
            rows = event_rows(row.pk, part, range(base + start, base + start + len(part)), seq)
            yield lambda rows=rows: insert_rows(Event, EVENT_INSERT_COLUMNS, rows)
        for _, part in chunks(plan.add_edges, size):
            rows = edge_rows(row.pk, part, seq)
            yield lambda rows=rows: insert_rows(Edge, EDGE_INSERT_COLUMNS, rows)
        for _, part in chunks(plan.create_agents, size):
            yield lambda part=part: create_agents(row, part, seq)
        for _, part in chunks(plan.add_labels, size):
            yield lambda part=part: create_labels(row, part, seq)

    commit_staged(staging, writes())


def commit_staged(
    staging: Staging, writes: Iterable[Callable[[], None]], turn: Callable[[], AbstractContextManager] = nullcontext
) -> None:
    """Run each of `writes` in its own transaction (inside `turn()`), after moving the staging's
    heartbeat (StagingLost where another writer took it over); `fault_injection_point` after each
    commit."""
    for number, write in enumerate(writes):
        with turn(), transaction.atomic():
            staging.heartbeat()
            write()
        fault_injection_point("chunk_committed", staging.trace_id, number)


def _write_staged(
    row: Trace,
    created: bool,
    fragment: core.Trace,
    plan: BatchPlan,
    stored: _StoredRows,
    staging: Staging,
    *,
    live: bool,
    broadcast: bool,
) -> IngestResult:
    """Stage `plan`'s new rows in chunks, then publish: merges into stored rows, the trace's seq and
    counts, in one short transaction. On any failure what was staged is deleted (and a trace this
    batch created), and the exception propagates."""
    seq = staging.published + 1
    try:
        _stage(row, plan, staging)
        with transaction.atomic():
            staging.heartbeat()
            fresh = Trace.objects.select_for_update().get(pk=row.pk)
            _update_stored(plan, stored, seq)
            _add_to_trace(fresh, fragment, plan, stored, seq, merge_fields=not created, live=live)
            fresh.staged_at = None
            fresh.save()
            if broadcast:  # no delta is built: viewers read what they lack from the database
                transaction.on_commit(lambda: broadcast_trace_seq(fresh.pk, seq))
                transaction.on_commit(lambda: notify_trace_list(fresh))
                if live:
                    transaction.on_commit(lambda: request_live_metrics(fresh.pk))
    except BaseException:
        discard_staged(staging, delete_trace=created)
        raise
    return IngestResult(fresh, created, seq, len(plan.insert_events), len(plan.update_events), wrote=True)


def discard_staged(staging: Staging, *, delete_trace: bool = False) -> None:
    """Delete the unpublished rows of `staging` (rows of its trace with seq > `published`), in
    transactions of SWARMSCOPE_INGEST_CHUNK_ROWS rows, then clear the trace's `staged_at` (or, with
    `delete_trace`, delete the trace a failed batch created). Stops where another writer has taken
    the staging over or the trace is gone."""
    size = max(1, settings.SWARMSCOPE_INGEST_CHUNK_ROWS)
    try:
        for model in (Event, Edge, Agent, Label):
            while True:
                with transaction.atomic():
                    staging.heartbeat()
                    unpublished = model.objects.filter(trace_id=staging.trace_id, seq__gt=staging.published)
                    if not model.objects.filter(pk__in=unpublished.values("pk")[:size]).delete()[0]:
                        break
        with transaction.atomic():
            staging.heartbeat()
            ours = Trace.objects.filter(pk=staging.trace_id, staged_at=staging.token)
            if delete_trace:
                for trace in ours:
                    trace.delete()
            else:
                ours.update(staged_at=None)
    except StagingLost:
        return


def notify_trace_list(row: Trace) -> None:
    """Send the saved trace `row` to the viewers of its project's trace list (after commit)."""
    broadcast_trace_list(row.project_id, list_delta(row))


def _find_or_create_trace(
    project: Project, fragment: core.Trace, trace: Trace | None, kind: str, derived_from: str
) -> tuple[Trace, bool]:
    """The locked trace row of `fragment` and whether it was created now."""
    if trace is not None:
        return Trace.objects.select_for_update().get(pk=trace.pk), False
    found = Trace.objects.select_for_update().filter(project=project, identity_key=fragment.identity_key).first()
    if found is not None:
        return found, False
    return Trace.objects.create(
        project=project,
        identity_key=fragment.identity_key,
        source_format=fragment.source_format,
        source_id=fragment.source_id,
        name=fragment.name or fragment.source_id[:200],
        system=fragment.system,
        topology=fragment.topology,
        task_id=fragment.task_id,
        attributes=fragment.attributes,
        rewards=fragment.rewards,
        costs=fragment.costs,
        metrics=fragment.metrics,
        kind=kind,
        derived_from=derived_from,
    ), True


# --- reading what is stored --------------------------------------------------------------------


@dataclass
class _StoredRows:
    """What `plan_batch` needs of a stored trace (`state`), and the row pks of its events and agents."""

    state: Stored = field(default_factory=Stored)
    event_pks: dict[str, int] = field(default_factory=dict)
    agent_pks: dict[str, int] = field(default_factory=dict)


def _read_stored(row: Trace, fragment: core.Trace) -> _StoredRows:
    """The stored rows `fragment` can meet (only those: a long live trace has many). A trace
    without events (one just created through the API) is not looked up event by event: a first
    batch of 10^6 events would cost 1,100 `IN (...)` queries finding nothing."""
    batch_ids = {e.id for e in fragment.events}
    has_events = row.events.exists()
    events = _existing_events(row, batch_ids) if has_events else {}
    names = (
        {a.name for a in fragment.agents}
        | {e.agent for e in fragment.events}
        | {e.to for e in fragment.events if e.type == "spawn" and e.to}
    )
    agents = _stored_agents(row, names)
    ends = {i for e in fragment.edges for i in (e.src, e.dst)} - batch_ids
    state = Stored(
        events={i: event_from_row(r) for i, r in events.items()},
        agents={name: agent_from_row(r) for name, r in agents.items()},
        edges=_stored_edges(row, fragment.edges) if row.edges.exists() else set(),
        event_ids=_known_event_ids(row, ends) if has_events else set(),
        labels=set(stored_labels(row)),
    )
    return _StoredRows(state, {i: r["id"] for i, r in events.items()}, {n: r["id"] for n, r in agents.items()})


def in_chunks(values: Iterable[Any]):
    """`values`, deduplicated, in lists short enough for an `IN (...)` look-up."""
    values = list(set(values))
    for start in range(0, len(values), LOOKUP_CHUNK):
        yield values[start : start + LOOKUP_CHUNK]


def _existing_events(trace: Trace, ids: set[str]) -> dict[str, dict[str, Any]]:
    """The stored events among `ids`: looked up by id, or, when the batch names at least half as
    many events as the trace holds (a re-import, a large re-send), read in one pass over the trace
    (cheaper than hundreds of `IN (...)` look-ups of 900 ids)."""
    if 2 * len(ids) >= trace.event_count:
        rows = trace.events.values("id", *EVENT_COLUMNS).iterator(chunk_size=LOOKUP_CHUNK * 10)
        return {row["event_id"]: row for row in rows if row["event_id"] in ids}
    return {
        row["event_id"]: row
        for chunk in in_chunks(ids)
        for row in trace.events.filter(event_id__in=chunk).values("id", *EVENT_COLUMNS)
    }


def _stored_agents(trace: Trace, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    return {
        a["name"]: a
        for chunk in in_chunks(names)
        for a in trace.agents.filter(name__in=chunk).values("id", *AGENT_COLUMNS)
    }


def _stored_edges(trace: Trace, edges: list[core.Edge]) -> set[tuple[str, str, str]]:
    """The stored (src, dst, type) among `edges`, looked up by their sources."""
    found: set[tuple[str, str, str]] = set()
    for chunk in in_chunks(e.src for e in edges):
        found.update(trace.edges.filter(src__in=chunk).values_list("src", "dst", "type"))
    return found


def _known_event_ids(trace: Trace, ids: Iterable[str]) -> set[str]:
    return {
        i
        for chunk in in_chunks(ids)
        for i in trace.events.filter(event_id__in=chunk).values_list("event_id", flat=True)
    }


def stored_labels(trace: Trace) -> dict[LabelKey, int]:
    """Every stored label's pk by its `label_key` (the last pk where several share a key)."""
    return {
        label_key(core.Label(key=r["key"], value=r["value"], event_id=r["event_id"], agent=r["agent"])): r["id"]
        for r in trace.labels.values("id", "key", "value", "event_id", "agent")
    }


# --- writing -----------------------------------------------------------------------------------


def _write_plan(row: Trace, plan: BatchPlan, stored: _StoredRows, seq: int) -> None:
    """Insert and update the rows of `plan` under `seq`; new events go after the stored ones."""
    insert_events(row, plan.insert_events, range(row.event_count, row.event_count + len(plan.insert_events)), seq)
    create_agents(row, plan.create_agents, seq)
    create_edges(row, plan.add_edges, seq)
    create_labels(row, plan.add_labels, seq)
    _update_stored(plan, stored, seq)


def _update_stored(plan: BatchPlan, stored: _StoredRows, seq: int) -> None:
    """Write `plan`'s merged forms of stored events and agents under `seq`."""
    Event.objects.bulk_update(
        [Event(pk=stored.event_pks[e.id], seq=seq, **event_columns(e)) for e in plan.update_events],
        [*_MERGED_EVENT_COLUMNS, "seq"],
        batch_size=BULK_BATCH,
    )
    Agent.objects.bulk_update(
        [
            Agent(pk=stored.agent_pks[a.name], seq=seq, **{f: getattr(a, f) for f in AGENT_FILL_FIELDS})
            for a in plan.update_agents
        ],
        [*AGENT_FILL_FIELDS, "seq"],
    )


def _add_to_trace(
    row: Trace,
    fragment: core.Trace,
    plan: BatchPlan,
    stored: _StoredRows,
    seq: int,
    *,
    merge_fields: bool,
    live: bool,
) -> None:
    """Bring the trace row's seq, counts and totals up to date with `plan` (not saved); with
    `merge_fields`, the fragment's rewards, costs, metrics and attributes merge into the row's."""
    row.seq = seq
    row.event_count += len(plan.insert_events)
    row.agent_count += len(plan.create_agents)
    if plan.touched_events:
        row.duration_s = max(row.duration_s, max(e.t_end if e.t_end is not None else e.t for e in plan.touched_events))
    if merge_fields:
        for name in ("rewards", "costs", "metrics", "attributes"):
            incoming = getattr(fragment, name)
            if incoming:
                setattr(row, name, {**getattr(row, name), **incoming})
    _add_token_usage(row, plan, stored)
    row.reward = headline_reward(row.rewards)
    if plan.add_labels:
        row.label_summary = label_summary(row.label_summary, plan.add_labels)
    if live:
        row.last_event_at = timezone.now()


def _add_token_usage(row: Trace, plan: BatchPlan, stored: _StoredRows) -> None:
    """The row's token figures after `plan` (swarmscope.tokens): `total_tokens` the costs' reported
    total, else plus the measured tokens the batch adds (inserted events, and stored events that
    gain tokens by a merge); `estimated_tokens` plus its estimates, less those a merge replaced."""
    added = events_usage(plan.insert_events)
    measured, estimated = added.measured, added.estimated
    for event in plan.update_events:
        before, after = event_usage(stored.state.events[event.id]), event_usage(event)
        estimated += after.estimated - before.estimated
        if before.measured is not None or after.measured is not None:
            measured = (measured or 0) + (after.measured or 0) - (before.measured or 0)
    row.estimated_tokens += estimated
    reported = reported_total(row.costs)
    if reported is not None:
        row.total_tokens = reported
    elif measured is not None:
        row.total_tokens = (row.total_tokens or 0) + measured


EVENT_INSERT_COLUMNS = ("trace_id", "position", "seq") + EVENT_DATA_COLUMNS
EDGE_INSERT_COLUMNS = ("trace_id", "seq", "src", "dst", "type")
assert EVENT_DATA_COLUMNS[-1] == "attributes"
#: The core Event's fields in EVENT_DATA_COLUMNS order, but `attributes` (a JSON column).
_EVENT_FIELDS = attrgetter(*({"event_id": "id", "from_agent": "from_"}.get(c, c) for c in EVENT_DATA_COLUMNS[:-1]))


def event_rows(trace_id: int, events: list[core.Event], positions: Iterable[int], seq: int) -> list[tuple]:
    """The rows (EVENT_INSERT_COLUMNS) of `events` at `positions`, ready for `insert_rows`; built
    before a transaction opens, so the write lock is held only while the database inserts them."""
    as_json = Jsonb if connection.vendor == "postgresql" else json.dumps
    return [(trace_id, p, seq, *_EVENT_FIELDS(e), as_json(e.attributes)) for p, e in zip(positions, events)]


def edge_rows(trace_id: int, edges: list[core.Edge], seq: int) -> list[tuple]:
    """The rows (EDGE_INSERT_COLUMNS) of `edges`."""
    return [(trace_id, seq, e.src, e.dst, e.type) for e in edges]


def insert_rows(model: type[Event] | type[Edge], columns: tuple[str, ...], rows: list[tuple]) -> None:
    """Insert `rows` (values of `columns`, JSON already adapted by `event_rows`) into `model`'s
    table: PostgreSQL's COPY (4x faster than INSERT for live batches), else one prepared INSERT
    run by the driver for every row (`executemany`: about 10x faster than bulk_create on SQLite,
    which builds a model instance and compiles SQL per row)."""
    if not rows:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({', '.join(['%s'] * len(columns))})", rows)


def insert_events(trace: Trace, events: list[core.Event], positions: Iterable[int], seq: int) -> None:
    """Insert events at `positions` (one each) under `seq` (`event_rows`, `insert_rows`)."""
    insert_rows(Event, EVENT_INSERT_COLUMNS, event_rows(trace.pk, events, positions, seq))


def create_agents(trace: Trace, agents: Sequence[core.Agent | Agent], seq: int) -> None:
    """Insert `agents` (core Agents, or Agent rows to insert again) under `seq`."""
    Agent.objects.bulk_create(
        [Agent(trace=trace, seq=seq, **{f: getattr(a, f) for f in AGENT_COLUMNS}) for a in agents],
        batch_size=BULK_BATCH,
    )


def create_edges(trace: Trace, edges: list[core.Edge], seq: int) -> None:
    insert_rows(Edge, EDGE_INSERT_COLUMNS, edge_rows(trace.pk, edges, seq))


def create_labels(trace: Trace, labels: list[core.Label], seq: int) -> None:
    Label.objects.bulk_create(
        [
            Label(
                trace=trace, seq=seq, key=lb.key, value=lb.value, event_id=lb.event_id, agent=lb.agent, source=lb.source
            )
            for lb in labels
        ]
    )


def headline_reward(rewards: dict[str, Any]) -> float | None:
    """The trace list's reward: `team`, `outcome` or `reward` where numeric, else the first number."""
    for key in ("team", "outcome", "reward"):
        if isinstance(rewards.get(key), (int, float)):
            return float(rewards[key])
    numbers = [v for v in rewards.values() if isinstance(v, (int, float))]
    return float(numbers[0]) if numbers else None


def label_summary(current: str, new_labels: list[core.Label]) -> str:
    """`current` ("key=value; ...") with the SUMMARY_LABELS and the evaluation scores
    (`scores.is_score_label`: "hallucination=1") among `new_labels` appended, at most 500
    characters. The list's Labels column, its search and its Labels facet (a trace is labelled
    when this is not empty) read it."""
    parts = [p for p in current.split("; ") if p]
    for label in new_labels:
        if label.key in SUMMARY_LABELS or is_score_label(label):
            text = f"{label.key}={summary_value(label.value)}"
            if text not in parts:
                parts.append(text)
    return "; ".join(parts)[:500]


def summary_value(value: Any) -> str:
    """A label value as the summary shows it: a whole float without ".0" (a Langfuse score 1.0 is
    "1"), other floats in at most 6 significant digits, anything else as text."""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# --- files -------------------------------------------------------------------------------------


def _counted(n: int, noun: str) -> str:
    """`n` with `noun`, in the plural unless n is 1: "1 agent", "4 events"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


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
        return [(line, self.traces[i] if i < len(self.traces) else None) for i, line in enumerate(self.lines)]

    @property
    def lines(self) -> list[str]:
        """One line per trace imported, then the skip reason (of the whole file, or of the part of
        it that made no trace: log records whose spans were not imported); or the failure."""
        if self.error:
            return [f"{self.name}: failed: {self.error}"]
        skipped = [f"{self.name}: skipped: {self.skipped}"] if self.skipped else []
        return [
            f"{self.name}: imported as trace {t.pk}: "
            f"{_counted(t.agent_count, 'agent')}, {_counted(t.event_count, 'event')}"
            + _no_events_reason(t)
            + (" (already stored, nothing new)" if t.pk in self.unchanged else "")
            for t in self.traces
        ] + skipped


def _no_events_reason(trace: Trace) -> str:
    """Why a trace made from spans has no events: none of them is an agent, model or tool span by the
    conventions the OpenTelemetry mapping reads (docs/otel-mapping.md, "Reading a span"); else ""."""
    spans = trace.attributes.get("spans") if isinstance(trace.attributes, dict) else None
    if trace.event_count or not isinstance(spans, int) or spans <= 0:
        return ""
    return (
        f" (none of its {_counted(spans, 'span')} is an agent, model call or tool call by the conventions"
        ' read: docs/otel-mapping.md, "Reading a span")'
    )


def do_import_sources(
    project: Project,
    sources: Iterable[SourceFile],
    *,
    kind: str | None = None,
    derived_from: str = "",
    reward_score: str | None = None,
    check: Callable[[SourceFile], None] | None = None,
) -> list[FileOutcome]:
    """Import files into `project`: each trace in its own transaction, all of it or nothing.

    Chunks of one span trace spread over several files merge into one trace (an OTLP logs file's
    records join the spans of their trace id; alone, the file is skipped naming its trace ids).
    Importing the same file twice changes nothing. Never raises on bad input: failures are in the
    outcomes. `kind` and `derived_from` as for `do_ingest` (a training run's episodes: "episode",
    "run:<id>"). Files are read one at a time (`sources` may be a generator); a gzip-compressed one
    is read decompressed as a stream, up to SWARMSCOPE_MAX_UPLOAD_BYTES, all files together within
    `import_budget()`; `check` may refuse a file's bytes (TraceFormatError). A trace's evaluation
    score named `reward_score`, else the one the project's `reward_score` setting names, else one
    named `reward`, is its reward
    (`swarmscope.importers.scores`; the caller checked the name: `reward_score_name`).
    """
    result = read_files(
        sources,
        max_decompressed=settings.SWARMSCOPE_MAX_UPLOAD_BYTES,
        budget=import_budget(),
        check=check,
        reward_score=reward_score or project.reward_score or None,
    )
    stored: dict[str, Trace] = {}
    unchanged: set[int] = set()
    errors: dict[str, str] = {}
    for trace in result.traces:
        try:
            ingested = do_ingest(project, trace, kind=kind, derived_from=derived_from)
            stored[trace.identity_key] = ingested.trace
            if ingested.changed:
                request_metrics(ingested.trace)
            else:
                unchanged.add(ingested.trace.pk)
        except IngestConflict as exc:
            errors[trace.identity_key] = f"conflicts with the stored trace {trace.identity_key}: {exc}"
        except core.TraceValidationError as exc:
            errors[trace.identity_key] = f"trace {trace.identity_key}: {exc}"
        except (TraceBusy, StagingLost) as exc:
            errors[trace.identity_key] = f"trace {trace.identity_key}: {exc}; nothing of it was stored"
    outcomes = []
    for report in result.files:
        failure = report.error or next((errors[k] for k in report.trace_keys if k in errors), None)
        outcomes.append(
            FileOutcome(
                name=report.name,
                traces=[stored[k] for k in report.trace_keys if k in stored],
                skipped=report.skipped,
                error=failure,
                unchanged=frozenset(unchanged),
            )
        )
    return outcomes


def import_budget() -> DecompressionBudget:
    """What the files of one import may hold together and how far a gzip file may expand: the
    settings SWARMSCOPE_MAX_IMPORT_BYTES and SWARMSCOPE_MAX_GZIP_RATIO, named in refusals."""
    return DecompressionBudget(
        total=settings.SWARMSCOPE_MAX_IMPORT_BYTES,
        ratio=settings.SWARMSCOPE_MAX_GZIP_RATIO,
        total_name="SWARMSCOPE_MAX_IMPORT_BYTES",
        ratio_name="SWARMSCOPE_MAX_GZIP_RATIO",
    )


def check_reward_score(project: Project, outcomes: list[FileOutcome], reward_score: str | None) -> list[str]:
    """The import report's notes on the reward score (`do_import_sources`'s `reward_score`, else
    the project's setting): one when no imported trace has a score of that name (exact match),
    naming the score names they have (`scores.missing_reward_score`; for the project's setting
    only when they have scores). Empty when no name applies or nothing was imported."""
    name = reward_score or project.reward_score or None
    traces = [t for o in outcomes for t in o.traces]
    if name is None or not traces:
        return []
    note = missing_reward_score(name, (t.attributes for t in traces), from_project=not reward_score)
    return [note] if note else []


def request_metrics(trace: Trace) -> None:
    """Enqueue the metrics computation of `trace` on the `default` queue, after commit."""
    transaction.on_commit(lambda: enqueue("webapp.traces.tasks.refresh_metrics", trace.pk))
