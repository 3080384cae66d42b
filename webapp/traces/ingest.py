"""Batch ingest and file import: an import, an API batch and a derived OTLP trace all end in writes here.

`do_ingest` reads what is stored of a trace, asks `swarmscope.ingest.plan_batch` what a fragment
changes (the identity rules: a re-sent event is a no-op, one that adds `t_end` or attributes
merges, a contradicting one refuses the whole batch), writes the plan in one transaction with bulk
inserts under the trace's next sequence number, and broadcasts one delta after commit
(webapp.web.broadcast). `do_import_sources` imports files, a trace at a time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from re import Pattern
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from swarmscope import model as core
from swarmscope.importers import SourceFile, read_files
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
from swarmscope.redaction import compiled, redact_trace
from webapp.accounts.models import Project
from webapp.web.broadcast import broadcast_trace_delta, broadcast_trace_list
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
    and the counts of events inserted and merged."""

    trace: Trace
    created: bool
    seq: int
    events_added: int
    events_updated: int
    rejected: int = 0  # OTLP spans refused (an id already stored with other content)

    @property
    def changed(self) -> bool:
        return self.created or self.events_added > 0 or self.events_updated > 0


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
    """
    check_storable(fragment)
    check_columns(fragment)
    fragment = redact_trace(fragment, redaction_patterns())
    with transaction.atomic():
        kind = kind or (Trace.STREAMED if live else Trace.IMPORTED)
        row, created = _find_or_create_trace(project, fragment, trace, kind, derived_from)
        stored = _StoredRows() if created else _read_stored(row, fragment)
        plan = plan_batch(stored.state, fragment)
        if plan.empty and not created:
            return IngestResult(row, False, row.seq, 0, 0)
        seq = row.seq + 1
        _write_plan(row, plan, stored, seq)
        _add_to_trace(row, fragment, plan, seq, merge_fields=not created, live=live)
        row.save()
        delta = write_delta(
            row, seq, plan.create_agents + plan.update_agents, plan.touched_events, plan.add_edges, plan.add_labels
        )
        if broadcast:
            transaction.on_commit(lambda: broadcast_trace_delta(row.pk, delta))
            transaction.on_commit(lambda: notify_trace_list(row))
        return IngestResult(row, created, seq, len(plan.insert_events), len(plan.update_events))


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
    """The stored rows `fragment` can meet (only those: a long live trace has many)."""
    batch_ids = {e.id for e in fragment.events}
    events = _existing_events(row, batch_ids)
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
        edges=_stored_edges(row, fragment.edges),
        event_ids=_known_event_ids(row, ends),
        labels=set(stored_labels(row)),
    )
    return _StoredRows(state, {i: r["id"] for i, r in events.items()}, {n: r["id"] for n, r in agents.items()})


def in_chunks(values: Iterable[Any]):
    """`values`, deduplicated, in lists short enough for an `IN (...)` look-up."""
    values = list(set(values))
    for start in range(0, len(values), LOOKUP_CHUNK):
        yield values[start : start + LOOKUP_CHUNK]


def _existing_events(trace: Trace, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
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
    Event.objects.bulk_update(
        [Event(pk=stored.event_pks[e.id], seq=seq, **event_columns(e)) for e in plan.update_events],
        [*_MERGED_EVENT_COLUMNS, "seq"],
        batch_size=BULK_BATCH,
    )
    create_agents(row, plan.create_agents, seq)
    Agent.objects.bulk_update(
        [
            Agent(pk=stored.agent_pks[a.name], seq=seq, **{f: getattr(a, f) for f in AGENT_FILL_FIELDS})
            for a in plan.update_agents
        ],
        [*AGENT_FILL_FIELDS, "seq"],
    )
    create_edges(row, plan.add_edges, seq)
    create_labels(row, plan.add_labels, seq)


def _add_to_trace(
    row: Trace, fragment: core.Trace, plan: BatchPlan, seq: int, *, merge_fields: bool, live: bool
) -> None:
    """Bring the trace row's seq, counts and totals up to date with `plan` (not saved); with
    `merge_fields`, the fragment's rewards, costs, metrics and attributes merge into the row's."""
    row.seq = seq
    row.event_count += len(plan.insert_events)
    row.agent_count += len(plan.create_agents)
    row.total_tokens += sum(e.tokens or 0 for e in plan.insert_events)
    if plan.touched_events:
        row.duration_s = max(row.duration_s, max(e.t_end if e.t_end is not None else e.t for e in plan.touched_events))
    if merge_fields:
        for name in ("rewards", "costs", "metrics", "attributes"):
            incoming = getattr(fragment, name)
            if incoming:
                setattr(row, name, {**getattr(row, name), **incoming})
    row.reward = headline_reward(row.rewards)
    if plan.add_labels:
        row.label_summary = label_summary(row.label_summary, plan.add_labels)
    if live:
        row.last_event_at = timezone.now()


_COPY_COLUMNS = ("trace_id", "position", "seq") + EVENT_DATA_COLUMNS


def insert_events(trace: Trace, events: list[core.Event], positions: Iterable[int], seq: int) -> None:
    """Insert events at `positions` (one each): PostgreSQL's COPY (4x faster than INSERT for live
    batches), else bulk_create."""
    if not events:
        return
    if connection.vendor != "postgresql":
        Event.objects.bulk_create(
            [Event(trace=trace, position=p, seq=seq, **event_columns(e)) for p, e in zip(positions, events)],
            batch_size=BULK_BATCH,
        )
        return
    table = Event._meta.db_table
    with (
        connection.cursor() as cursor,
        cursor.cursor.copy(
            f"COPY {table} ({', '.join(connection.ops.quote_name(c) for c in _COPY_COLUMNS)}) FROM STDIN"
        ) as copy,
    ):
        for p, event in zip(positions, events):
            columns = event_columns(event)
            columns["attributes"] = Jsonb(columns["attributes"])
            copy.write_row((trace.pk, p, seq, *(columns[c] for c in EVENT_DATA_COLUMNS)))


def create_agents(trace: Trace, agents: list[core.Agent], seq: int) -> None:
    Agent.objects.bulk_create(
        [Agent(trace=trace, seq=seq, **{f: getattr(a, f) for f in AGENT_COLUMNS}) for a in agents],
        batch_size=BULK_BATCH,
    )


def create_edges(trace: Trace, edges: list[core.Edge], seq: int) -> None:
    Edge.objects.bulk_create(
        [Edge(trace=trace, seq=seq, src=e.src, dst=e.dst, type=e.type) for e in edges], batch_size=BULK_BATCH
    )


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
    """`current` ("key=value; ...") with the SUMMARY_LABELS among `new_labels` appended, at most 500 characters."""
    parts = [p for p in current.split("; ") if p]
    for label in new_labels:
        if label.key in SUMMARY_LABELS:
            text = f"{label.key}={label.value}"
            if text not in parts:
                parts.append(text)
    return "; ".join(parts)[:500]


# --- files -------------------------------------------------------------------------------------


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
        return [
            f"{self.name}: imported as trace {t.pk}: {t.agent_count} agents, {t.event_count} events"
            + (" (already stored, nothing new)" if t.pk in self.unchanged else "")
            for t in self.traces
        ]


def do_import_sources(
    project: Project, sources: Iterable[SourceFile], *, kind: str | None = None, derived_from: str = ""
) -> list[FileOutcome]:
    """Import files into `project`: each trace in its own transaction, all of it or nothing.

    Chunks of one span trace spread over several files merge into one trace. Importing the same
    file twice changes nothing. Never raises on bad input: failures are in the outcomes. `kind` and
    `derived_from` as for `do_ingest` (a training run's episodes: "episode", "run:<id>").
    """
    result = read_files(sources)
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


def request_metrics(trace: Trace) -> None:
    """Enqueue the metrics computation of `trace` on the `default` queue, after commit."""
    transaction.on_commit(lambda: enqueue("webapp.traces.tasks.refresh_metrics", trace.pk))
