"""OTLP spans: stored one row per span id, and the stored trace made equal to the build of all of them.

`do_ingest_spans` stores the spans of one request and rebuilds the trace within it while the trace
is small (SWARMSCOPE_OTLP_SYNC_SPANS), else leaves it `spans_pending` for the `derive_spans` task
(`do_derive_spans`). `do_ingest_log_records` stores OTLP log records (GenAI content events) and
rebuilds the traces whose spans they belong to the same way: every build adds a trace's stored
log records to their spans as span events (`otlp.attach_logs`), so content joins its span
whichever of the two arrives first. `_store_build` writes only the difference between the
stored trace and the build; viewers get a delta when it only adds or fills in, else a reset. The
task makes that difference outside the write transaction (`_plan_build`) and writes it under the
trace's lock (`_apply_plan`), making it again there when the trace was written in between.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from re import Pattern
from typing import Any, cast

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from swarmscope import model as core
from swarmscope.importers import otlp
from swarmscope.importers.otel import Span
from swarmscope.importers.scores import select_reward
from swarmscope.ingest import check_storable, label_key, new_trace_agents
from swarmscope.inputs import json_may_refuse, refused_text_in
from swarmscope.redaction import matches_nowhere, redact_event, redact_trace, redact_value
from swarmscope.tokens import trace_usage
from webapp.accounts.models import Project
from webapp.web.broadcast import broadcast_trace_delta, broadcast_trace_reset
from webapp.web.jobs import enqueue

from .ingest import (
    BULK_BATCH,
    EVENT_INSERT_COLUMNS,
    IngestResult,
    Staging,
    StagingLost,
    TraceBusy,
    abandoned_staging,
    chunks,
    commit_staged,
    create_agents,
    create_edges,
    create_labels,
    discard_staged,
    event_rows,
    headline_reward,
    in_chunks,
    insert_events,
    insert_rows,
    label_summary,
    notify_trace_list,
    redaction_patterns,
    stored_labels,
)
from .models import Agent, Edge, Event, Label, StoredLogRecord, StoredSpan, Trace
from .services import AGENT_COLUMNS, EVENT_DATA_COLUMNS, event_columns, event_from_row, write_delta
from .write_turn import write_turn

logger = logging.getLogger(__name__)


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
    patterns = redaction_patterns()
    incoming: dict[str, dict[str, Any]] = {}
    texts: dict[str, str] = {}  # span id -> the JSON of its `incoming` data, stored as it is on SQLite
    rejected = 0
    for index, span in enumerate(spans):
        if not span.span_id:
            raise core.TraceValidationError(
                f"span {span.name!r} has no span id", index=index, kind="span", field="span_id"
            )
        data, text, refusal = _storable(span.to_dict(), patterns)
        if refusal is not None:  # a NUL character or a lone surrogate (swarmscope.inputs.text_refusal)
            raise core.TraceValidationError(
                f"span {span.span_id} ({span.name!r}) {refusal}",
                index=index,
                kind="span",
            )
        texts.setdefault(span.span_id, text)
        rejected += incoming.setdefault(span.span_id, data) != data
    with transaction.atomic():
        row = _lock_or_create_span_trace(project, module, trace_id)
        known = {
            i: d
            for chunk in in_chunks(incoming)
            for i, d in row.spans.filter(span_id__in=chunk).values_list("span_id", "data")
        }
        rejected += sum(known[i] != d for i, d in incoming.items() if i in known)
        new = {i: d for i, d in incoming.items() if i not in known}
        if not new:
            return IngestResult(row, False, row.seq, 0, 0, rejected)
        created = not row.spans.exists()
        result = _derive(row, module, new, source)
        result.created, result.rejected = created, rejected
        postgres = connection.vendor == "postgresql"
        insert_rows(
            StoredSpan, _SPAN_COLUMNS, [(row.pk, i, Jsonb(d) if postgres else texts[i]) for i, d in new.items()]
        )
        return result


def _storable(data: dict[str, Any], patterns: list[Pattern[str]]) -> tuple[dict[str, Any], str, str | None]:
    """(`data` redacted, its JSON, None), or (`data`, its JSON, why it cannot be stored:
    `refused_text_in`). Both walks over every string are skipped where one pass over the value's
    JSON text shows they would find nothing (`json_may_refuse`, `matches_nowhere`): most spans hold
    no NUL, surrogate or needle."""
    text = json.dumps(data, ensure_ascii=False)
    if json_may_refuse(text):
        refusal = refused_text_in(data)
        if refusal is not None:
            return data, text, refusal
    if matches_nowhere(text, patterns):
        return data, text, None
    redacted = redact_value(data, patterns)
    return redacted, (text if redacted is data else json.dumps(redacted, ensure_ascii=False)), None


#: StoredSpan's columns, in the order of `do_ingest_spans`' rows.
_SPAN_COLUMNS = ("trace_id", "span_id", "data")


def _derive(row: Trace, module, new: dict[str, dict[str, Any]], source: str) -> IngestResult:
    """Make `row` the build of its stored spans, `new` (span id -> `Span.to_dict`, not yet stored)
    and its log records: within the transaction while that is at most SWARMSCOPE_OTLP_SYNC_SPANS
    spans, else by the `derive_spans` task after commit (the row is left `spans_pending`; `new` is
    then not decoded into spans). The stored spans are counted only up to that limit: a full COUNT
    grows with the trace (tens of ms at 10^6 spans)."""
    limit = settings.SWARMSCOPE_OTLP_SYNC_SPANS
    stored = row.spans.values("pk")[: limit + 1].count()
    if stored + len(new) <= limit:
        if row.staged_at is not None:  # a batch is being staged into it (webapp.traces.ingest)
            raise TraceBusy(row.pk, 1)
        trace = _build(row, module, _stored_spans(row) + [Span.from_dict(d) for d in new.values()], source)
        core.validate_trace(trace)
        return _store_build(row, trace)
    # the spans were checked as they were decoded (ids, times) and when they came (NUL)
    Trace.objects.filter(pk=row.pk).update(spans_pending=True)
    transaction.on_commit(lambda: _enqueue_derive(row.pk, source))
    return IngestResult(row, False, row.seq, 0, 0, 0)


def _build(row: Trace, module, spans: list[Span], source: str) -> core.Trace:
    """The trace of `spans` with the row's stored log records added to their spans as span events;
    its attributes count the records (`log_records`) when there are any, so a build that saw
    fewer is known to be older (`do_derive_spans`). Its evaluation score named by the project's
    `reward_score` setting, else one named `reward`, is its reward (`scores.select_reward`)."""
    records = [otlp.LogRecord.from_dict(d) for d in row.log_records.values_list("data", flat=True)]
    trace = module.build(row.source_id, otlp.attach_logs(spans, records), [source])
    if records:
        trace.attributes["log_records"] = len(records)
    reward_score = Project.objects.filter(pk=row.project_id).values_list("reward_score", flat=True).first()
    return select_reward(trace, reward_score or None)


def do_ingest_log_records(project: Project, module, records: list[otlp.LogRecord], source: str) -> LogIngestResult:
    """Store the OTLP log `records` of one request and rebuild the traces they add content to, all
    or nothing (the caller's transaction).

    A record with a trace id is stored with that trace's row (created empty when the spans have not
    come yet, so the records join them when they do); the trace is re-derived as for new spans
    (`_derive`) when it has spans. A record without a trace id is kept with no trace. A record
    equal to a stored one (an exporter's retry; same digest in the project) is not stored again.
    Raises core.TraceValidationError naming the record's index when it holds a NUL character,
    and what `do_ingest_spans` raises when the rebuilt trace is not valid.
    """
    patterns = redaction_patterns()
    by_trace: dict[str | None, dict[str, dict[str, Any]]] = {}
    for index, record in enumerate(records):
        data, _, refusal = _storable(record.to_dict(), patterns)
        if refusal is not None:
            raise core.TraceValidationError(
                f"log record {index} ({record.event_name or 'no event name'}) {refusal}",
                index=index,
                kind="log record",
            )
        digest = hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()
        by_trace.setdefault(record.trace_id, {})[digest] = data
    result = LogIngestResult()
    with write_turn(), transaction.atomic():
        for trace_id, incoming in by_trace.items():
            row = _lock_or_create_span_trace(project, module, trace_id) if trace_id else None
            known = {
                d
                for chunk in in_chunks(incoming)
                for d in StoredLogRecord.objects.filter(project=project, digest__in=chunk).values_list(
                    "digest", flat=True
                )
            }
            new = [
                StoredLogRecord(project=project, trace=row, span_id=d.get("span_id") or "", digest=digest, data=d)
                for digest, d in incoming.items()
                if digest not in known
            ]
            StoredLogRecord.objects.bulk_create(new, batch_size=BULK_BATCH)
            result.stored += len(new)
            if row is not None and new and row.spans.exists():
                _derive(row, module, {}, source)
                result.traces.append(row)
    return result


@dataclass
class LogIngestResult:
    """What `do_ingest_log_records` did: records stored (retries not counted) and traces rebuilt."""

    stored: int = 0
    traces: list[Trace] = field(default_factory=list)


def _lock_or_create_span_trace(project: Project, module, trace_id: str) -> Trace:
    """The locked row of a span trace, created (empty) when missing. Two first requests of one
    trace at once: the second insert waits for the first to commit, fails, and locks its row."""
    key = f"{module.FORMAT}:{trace_id}"
    row = Trace.objects.select_for_update().filter(project=project, identity_key=key).first()
    if row is not None:
        return row
    try:
        with transaction.atomic():
            return Trace.objects.create(
                project=project,
                identity_key=key,
                source_format=module.FORMAT,
                source_id=trace_id,
                name=trace_id,
                kind=Trace.STREAMED,
            )
    except IntegrityError:
        return Trace.objects.select_for_update().get(project=project, identity_key=key)


def _stored_spans(row: Trace) -> list[Span]:
    return [Span.from_dict(d) for d in row.spans.values_list("data", flat=True)]


def spans_stored_key(trace_pk: int) -> str:
    """The cache key holding when (time.time()) a request last stored spans of a trace left to the
    worker: `derive_spans` waits between derivations only while they keep coming."""
    return f"swarmscope:spans-stored:{trace_pk}"


def _enqueue_derive(trace_pk: int, source: str) -> None:
    """Ask a worker to re-derive a trace (after noting when its spans came: spans_stored_key). A
    broker or cache that cannot be reached never fails the committed request: the trace keeps
    `spans_pending`, and the next request or the periodic `derive_pending_spans` asks again."""
    try:
        cache.set(spans_stored_key(trace_pk), time.time(), timeout=60)
    except Exception:  # noqa: BLE001 - any cache error: the worker then does not wait
        logger.warning("could not note the spans of trace %s in the cache", trace_pk, exc_info=True)
    try:
        enqueue("webapp.traces.tasks.derive_spans", trace_pk, source)
    except Exception:  # noqa: BLE001 - any broker error
        logger.warning("could not enqueue derive_spans(%s); it stays pending", trace_pk, exc_info=True)


def do_derive_spans(trace_pk: int, module, source: str) -> IngestResult | None:
    """Re-derive a trace from all its stored spans if requests left it `spans_pending`; None when
    there was nothing to do. The build, its checks and its difference from the stored trace are
    made outside any transaction, so SQLite's write lock (which every OTLP request takes) is held
    only while the difference is written; the difference is made again under the lock when the
    trace was written in between (its seq moved). A build older than the stored one is dropped.

    The worker keeps its last derivation of a trace (`_Derivation`): the next one reads only the
    spans stored since, maps each span's own fields once (`span_memo`), and, while no one else wrote
    the trace, diffs and redacts only the events whose build changed instead of reading every
    stored event (or edge) back. The build and diff run with the cyclic collector paused
    (`collector_paused`). More than SWARMSCOPE_OTLP_DERIVE_CHUNK_ROWS added events are staged in
    chunks before the rest is written (`_stage_added_events`). A derivation that fails leaves the
    trace `spans_pending` (the periodic sweep derives it again) and nothing of it visible; one that
    finds a batch staged into the trace derives it later, unless that batch's writer died
    (`abandoned_staging`): then it deletes what was staged first."""
    if not Trace.objects.filter(pk=trace_pk, spans_pending=True).update(spans_pending=False):
        return None
    started = time.perf_counter()
    row = Trace.objects.get(pk=trace_pk)
    if row.staged_at is not None:  # a batch is being staged into it: derive again once it is published
        try:
            discard_staged(abandoned_staging(row))  # unless its writer died: then what it staged goes
        except TraceBusy:
            Trace.objects.filter(pk=trace_pk).update(spans_pending=True)
            return None
        row = Trace.objects.get(pk=trace_pk)
    memo = _DERIVED.pop(trace_pk, None)
    if memo is not None and memo.created_at != row.created_at:  # another trace that had this pk
        memo = None
    spans, span_pk = _spans_since(row, memo)
    try:
        with collector_paused():
            trace = _build(row, module, spans, source)
            core.validate_trace(trace)
            plan = _plan_build(row, trace, memo if memo is not None and memo.seq == row.seq else None)
    except (core.TraceValidationError, ValueError):  # its spans were checked when they came: a bug
        logger.exception("trace %s: its stored spans do not form a valid trace; kept as derived before", trace_pk)
        return None
    planned = time.perf_counter()
    staging = None
    try:
        staging = _stage_added_events(row, plan)
        with write_turn(), transaction.atomic():
            locked = Trace.objects.select_for_update().get(pk=trace_pk)
            if staging is not None:
                staging.heartbeat()
                locked.staged_at = None  # published below
            elif locked.staged_at is not None:  # a batch is being staged: derive again later
                Trace.objects.filter(pk=trace_pk).update(spans_pending=True)
                return None
            if _build_size(locked.attributes) > _build_size(trace.attributes):
                raise _Outdated
            if locked.seq != row.seq:  # a request or another derivation wrote the trace meanwhile
                plan = _plan_build(locked, trace)
            result = _apply_plan(locked, plan, staged=staging is not None)
            derived = _Derivation.after(locked, plan, spans, span_pk)
            transaction.on_commit(lambda: _remember(trace_pk, derived))
    except (_Outdated, StagingLost) as exc:
        if staging is not None:
            discard_staged(staging)
        if isinstance(exc, StagingLost):  # another writer took the trace over: derive again later
            _mark_pending(trace_pk)
        return None
    except BaseException:
        if staging is not None:
            discard_staged(staging)
        _mark_pending(trace_pk)  # for the periodic sweep to derive it again
        raise
    logger.info(
        "trace %s derived from %d spans (%s): read, build and plan %.2f s, write %.2f s; events +%d ~%d",
        trace_pk,
        len(spans),
        "from its last derivation" if memo is not None else "from scratch",
        planned - started,
        time.perf_counter() - planned,
        result.events_added,
        result.events_updated,
    )
    return result


def _mark_pending(trace_pk: int) -> None:
    """Leave a trace whose derivation failed or gave way `spans_pending`, where the database answers."""
    try:
        Trace.objects.filter(pk=trace_pk).update(spans_pending=True)
    except Exception:  # noqa: BLE001 - the database itself failed: the next request marks it
        logger.warning("could not leave trace %s pending after its derivation failed", trace_pk, exc_info=True)


class _Outdated(Exception):
    """The stored trace was derived from more spans or records than this build (`_build_size`)."""


def _stage_added_events(row: Trace, plan: _BuildPlan) -> Staging | None:
    """Insert the events `plan` adds before the rest of its write, SWARMSCOPE_OTLP_DERIVE_CHUNK_ROWS
    a transaction, under the plan's seq and unpublished until the trace's seq reaches it (the
    staging of webapp.traces.ingest: `staged_at` holds other event writers off; OTLP requests that
    only store spans go on), so a large derivation holds SQLite's write lock, or the trace row's
    lock on PostgreSQL, a chunk at a time. None, with nothing written, when the added events fit in
    one chunk, or the trace was written since `row` was read or another writer stages into it: the
    caller then writes them with the rest. On failure what was staged is deleted and the exception
    propagates (StagingLost: another writer took the staging over)."""
    added, size = plan.events.added, max(1, settings.SWARMSCOPE_OTLP_DERIVE_CHUNK_ROWS)
    if len(added) <= size:
        return None
    with write_turn(), transaction.atomic():
        locked = Trace.objects.select_for_update().get(pk=row.pk)
        if locked.staged_at is not None or locked.seq != row.seq:
            return None
        staging = Staging.begin(locked)
    start = plan.events.next_position

    def writes():
        """One callable per transaction; its rows are built before it."""
        for offset, part in chunks(added, size):
            rows = event_rows(row.pk, part, range(start + offset, start + offset + len(part)), plan.seq)
            yield lambda rows=rows: insert_rows(Event, EVENT_INSERT_COLUMNS, rows)

    try:
        commit_staged(staging, writes(), turn=write_turn)
    except BaseException:
        discard_staged(staging)
        raise
    return staging


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off, process-wide, while a derivation builds and diffs, or
    an OTLP request decodes and stores its spans (back on after, unless it was off before; about 12 %
    of a request's CPU at 500 spans). The build's objects are alive until it ends, and most then go
    (an unchanged event keeps its last build's object): collections while it runs would move them
    to the oldest generation, and every full collection walks the whole kept state (0.6 s of a
    3 s re-derivation at 33k spans, measured: bench/RESULTS.md). Nothing is leaked: reference
    counting frees the build's objects, and the collector finds any cycle once it is back on."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build_size(attributes: dict[str, Any]) -> tuple[int, int]:
    """(spans, log records) a build was made of; builds only grow, so a smaller one is older."""
    return attributes.get("spans", 0), attributes.get("log_records", 0)


@dataclass
class _Derivation:
    """A worker's last derivation of one trace, valid while the trace's seq is still `seq`: the
    spans read (`spans`, up to StoredSpan pk `span_pk`), the build's events before redaction
    (`raw`) and as stored (`stored`), by event id, with their `position`s, and the stored edges
    (`edges`: (src, dst, type) -> pk, None for those it wrote). `created_at` tells the trace from
    a later one given the same pk."""

    created_at: Any
    seq: int
    span_pk: int
    spans: list[Span]
    raw: dict[str, core.Event]
    stored: dict[str, core.Event]
    position: dict[str, int]
    edges: dict[tuple[str, str, str], int | None]

    @classmethod
    def after(cls, row: Trace, plan: _BuildPlan, spans: list[Span], span_pk: int) -> _Derivation:
        """The state of `row` once `plan` is written (takes over the plan's positions)."""
        diff, start = plan.events, plan.events.next_position
        position = {i: p for i, p in diff.position.items() if i in diff.stored} if diff.removed else diff.position
        position.update(zip((e.id for e in diff.added), range(start, start + len(diff.added))))
        return cls(row.created_at, plan.seq, span_pk, spans, diff.raw, diff.stored, position, plan.edge_pks)


#: Trace pk -> its last derivation in this process, least recently used first; at most
#: SWARMSCOPE_OTLP_DERIVE_CACHE_SPANS spans in all.
_DERIVED: OrderedDict[int, _Derivation] = OrderedDict()


def _remember(trace_pk: int, derived: _Derivation) -> None:
    _DERIVED[trace_pk] = derived
    budget = settings.SWARMSCOPE_OTLP_DERIVE_CACHE_SPANS
    while _DERIVED and sum(len(d.spans) for d in _DERIVED.values()) > budget:
        _DERIVED.popitem(last=False)


def _spans_since(row: Trace, memo: _Derivation | None) -> tuple[list[Span], int]:
    """(all stored spans of `row`, the highest StoredSpan pk read): only those stored after `memo`'s
    when given (stored spans are never changed or removed)."""
    spans, since = ([], 0) if memo is None else (list(memo.spans), memo.span_pk)
    last = since
    for pk, data in row.spans.filter(pk__gt=since).order_by("pk").values_list("pk", "data").iterator(chunk_size=2000):
        span = Span.from_dict(data)
        span.memo = {}  # kept by the worker and never changed: the mapping's per-span work is kept
        spans.append(span)
        last = pk
    return spans, last


# --- making a stored trace equal to a build ----------------------------------------------------


def _store_build(row: Trace, build: core.Trace) -> IngestResult:
    """Make `row`'s events, edges, agents and labels equal to what `do_ingest` would store for
    `build` in a new trace, writing only the difference under the next seq. Viewers get a delta
    when the difference only adds or fills in; else (something removed or changed) a new snapshot.
    Raises core.TraceValidationError (before any write) for text no database can store."""
    return _apply_plan(row, _plan_build(row, build))


@dataclass
class _BuildPlan:
    """What `_store_build` writes to make a trace row equal to `build` (redacted): the differences
    from the rows stored at `seq - 1`, made by reading only (`_plan_build`)."""

    build: core.Trace
    seq: int
    events: _EventDiff
    agents: _AgentDiff
    edges: _KeyedDiff
    labels: _KeyedDiff
    #: Every edge once written, (src, dst, type) -> its pk (None: written by this plan).
    edge_pks: dict[tuple[str, str, str], int | None]


def _plan_build(row: Trace, build: core.Trace, memo: _Derivation | None = None) -> _BuildPlan:
    """Check and redact `build` and diff it against `row`'s stored rows; reads only, so it may run
    outside the transaction that writes it (`do_derive_spans`). With `memo` (the last derivation,
    made at the row's seq) only the events whose build changed since are checked, redacted and
    compared, and stored events are not read. Raises core.TraceValidationError for text no database
    can store (`check_storable`)."""
    patterns = redaction_patterns()
    wanted_edges = {(e.src, e.dst, e.type): e for e in build.edges}
    stored_edges = _stored_edges(row, memo, wanted_edges)
    if memo is None:
        check_storable(build)
        build = redact_trace(build, patterns)
        events = _diff_events(row, build.events)
    else:
        events = _diff_events_since(memo, build.events, patterns)
        new_edges = [e for key, e in wanted_edges.items() if key not in stored_edges]  # the others are stored
        check_storable(dataclasses.replace(build, events=events.raw_changes, edges=new_edges))
        build = dataclasses.replace(
            redact_trace(dataclasses.replace(build, events=[]), patterns),
            events=[events.stored[e.id] for e in build.events],
        )
    seq = row.seq + 1
    return _BuildPlan(
        build=build,
        seq=seq,
        events=events,
        agents=_diff_agents(row, new_trace_agents(build), seq),
        edges=_diff_keyed(wanted_edges, stored_edges),
        labels=_diff_keyed({label_key(lb): lb for lb in build.labels}, stored_labels(row)),
        edge_pks={key: stored_edges.get(key) for key in wanted_edges},
    )


def _stored_edges(
    row: Trace, memo: _Derivation | None, wanted: dict[tuple[str, str, str], core.Edge]
) -> dict[tuple[str, str, str], int | None]:
    """(src, dst, type) -> pk of `row`'s stored edges: those `memo` kept (pk None for an edge written
    since, not read back) unless one of those is no longer `wanted` (its pk is needed to delete
    it), else read from the database."""
    if memo is not None and all(pk is not None or key in wanted for key, pk in memo.edges.items()):
        return memo.edges
    return {(r["src"], r["dst"], r["type"]): r["id"] for r in row.edges.values("id", "src", "dst", "type")}


def _apply_plan(row: Trace, plan: _BuildPlan, *, staged: bool = False) -> IngestResult:
    """Write `plan` (made against `row` as it is stored now) under its seq, and notify viewers;
    `staged`: its added events are already stored, unpublished (`_stage_added_events`)."""
    build, seq, events, agents, edges, labels = plan.build, plan.seq, plan.events, plan.agents, plan.edges, plan.labels
    _write_events(row, events, seq, insert=not staged)
    _delete(Edge, edges.removed)
    create_edges(row, edges.added, seq)
    # Agents keep the build's order (their pk order): one changed in place is updated; those from
    # the first out of place on are deleted and inserted again in order (no row refers to an
    # agent's pk).
    Agent.objects.bulk_update(agents.updated, [*AGENT_COLUMNS, "seq"])
    _delete(Agent, agents.removed + [a.pk for a in agents.inserted if isinstance(a, Agent)])
    create_agents(row, agents.inserted, seq)
    _delete(Label, labels.removed)
    create_labels(row, labels.added, seq)
    _set_from_build(row, build, seq, event_count=events.count, agent_count=agents.count)

    removes = events.removed or edges.removed or agents.removed or labels.removed
    if removes or not (events.fills_in and agents.fills_in):
        row.reset_seq = seq
        row.save()
        transaction.on_commit(lambda: broadcast_trace_reset(row.pk, seq))
        transaction.on_commit(lambda: notify_trace_list(row))
    else:
        row.save()
        delta = write_delta(
            row,
            seq,
            agents.added + agents.changed,
            events.added + [after for _, _, after in events.changed],
            edges.added,
            labels.added,
        )
        transaction.on_commit(lambda: broadcast_trace_delta(row.pk, delta))
        transaction.on_commit(lambda: notify_trace_list(row))
    return IngestResult(row, False, seq, len(events.added), len(events.changed))


@dataclass
class _EventDiff:
    """A build's events against the stored ones. `changed`: (stored form, its position, new form);
    `removed`: event ids; `fills_in`: every change only adds. By event id: `stored`, every event as
    it is stored once the diff is written (redacted); `raw`, the build's events before redaction;
    `position`, the stored events' positions. `raw_changes`: the raw form of added and changed events."""

    added: list[core.Event]
    changed: list[tuple[core.Event, int, core.Event]]
    removed: list[str]
    stored: dict[str, core.Event]
    raw: dict[str, core.Event]
    position: dict[str, int]
    raw_changes: list[core.Event] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.stored)

    @cached_property
    def next_position(self) -> int:
        """The position after the stored events' (read once: `after` then adds to `position`)."""
        return max(self.position.values(), default=-1) + 1

    @property
    def fills_in(self) -> bool:
        return all(_fills_in(before, after) for before, _, after in self.changed)


def _diff_events(row: Trace, build_events: list[core.Event]) -> _EventDiff:
    """`build_events` (redacted) against every event row stored for `row`."""
    events = {e.id: e for e in build_events}
    stored = {r["event_id"]: r for r in row.events.values("position", *EVENT_DATA_COLUMNS)}
    added, changed = [], []
    for i, e in events.items():
        before = stored.get(i)
        if before is None:
            added.append(e)
        elif event_columns(e) != {c: before[c] for c in EVENT_DATA_COLUMNS}:
            changed.append((event_from_row(before), before["position"], e))
    return _EventDiff(
        added=added,
        changed=changed,
        removed=[i for i in stored if i not in events],
        stored=events,
        raw=events,
        position={i: r["position"] for i, r in stored.items()},
    )


def _diff_events_since(memo: _Derivation, build_events: list[core.Event], patterns: list[Pattern[str]]) -> _EventDiff:
    """`build_events` (not redacted) against the events of the last derivation `memo`, stored
    since: an event equal to its last build is stored as it was; only the others are redacted
    and compared."""
    raw: dict[str, core.Event] = {}
    stored: dict[str, core.Event] = {}
    added, changed, raw_changes = [], [], []
    kept_raw, kept_stored = memo.raw, memo.stored  # by the same ids
    kept = 0  # events of the last build that this one has too
    for e in build_events:  # ids are unique (core.validate_trace)
        i = e.id
        last = kept_raw.get(i)
        kept += last is not None
        if last is not None and last.__dict__ == e.__dict__:  # `last == e` (same fields), without tuples
            raw[i], stored[i] = last, kept_stored[i]  # the kept objects: the build's own go with it
            continue
        raw[i] = e
        before = memo.stored.get(i)
        if before is not None and last is not None and last.content == e.content and last.attributes == e.attributes:
            # only times, type or ends moved (a parent arriving late moves the time origin): its
            # redacted content is the stored one
            after = stored[i] = dataclasses.replace(e, content=before.content, attributes=before.attributes)
        else:
            after = stored[i] = redact_event(e, patterns)
        if before is None:
            added.append(after)
        elif event_columns(before) != event_columns(after):
            changed.append((before, memo.position[i], after))
        else:
            continue
        raw_changes.append(e)
    return _EventDiff(
        added=added,
        changed=changed,
        removed=[i for i in kept_stored if i not in raw] if kept < len(kept_stored) else [],
        stored=stored,
        raw=raw,
        position=memo.position,
        raw_changes=raw_changes,
    )


def _fills_in(before: core.Event, after: core.Event) -> bool:
    """Whether `after` only adds to `before` by the identity rules (`core.merge_event`)."""
    try:
        return core.merge_event(before, after) in (None, after)
    except core.TraceValidationError:
        return False


#: What a changed event row gets: every column but its identity and position (then `seq`); the
#: same without the two that SQLite's full-text index reads (webapp.traces.search); and only the
#: times, for an event whose other columns are as stored (a late root span moved the time origin).
_UPDATED_EVENT_COLUMNS = (*EVENT_DATA_COLUMNS[1:], "seq")
_UPDATED_EVENT_COLUMNS_UNINDEXED = tuple(c for c in _UPDATED_EVENT_COLUMNS if c not in ("tool", "content"))
_TIME_COLUMNS = ("t", "t_end", "seq")
#: core.Event's fields but its times.
_UNTIMED_FIELDS = tuple(f.name for f in dataclasses.fields(core.Event) if f.name not in ("t", "t_end"))


def _write_events(row: Trace, diff: _EventDiff, seq: int, *, insert: bool = True) -> None:
    """Delete the removed events, update the changed ones in place (same row, same position) and,
    with `insert`, insert the added ones after the stored positions. A changed event is one prepared UPDATE per
    row run by `executemany`, not a delete and an insert, of only the columns that may have
    changed: when a late root span moves the time origin every event changes its times only
    (`_TIME_COLUMNS`: no JSON to encode), and an UPDATE that leaves `tool` and `content` out does
    not fire SQLite's FTS5 trigger (`AFTER UPDATE OF tool, content`). Django's bulk_update (a CASE
    per row) costs seconds for a few thousand rows."""
    for chunk in in_chunks(diff.removed):
        Event.objects.filter(trace=row, event_id__in=chunk).delete()
    columns: dict[tuple[str, ...], list[core.Event]] = {
        _TIME_COLUMNS: [],
        _UPDATED_EVENT_COLUMNS_UNINDEXED: [],
        _UPDATED_EVENT_COLUMNS: [],
    }
    for before, _, after in diff.changed:
        if after.content != before.content or after.tool != before.tool:
            columns[_UPDATED_EVENT_COLUMNS].append(after)
        elif all(getattr(before, f) == getattr(after, f) for f in _UNTIMED_FIELDS):
            columns[_TIME_COLUMNS].append(after)
        else:
            columns[_UPDATED_EVENT_COLUMNS_UNINDEXED].append(after)
    for names, events in columns.items():
        _update_events(row, events, seq, names)
    if insert:
        start = diff.next_position
        insert_events(row, diff.added, range(start, start + len(diff.added)), seq)


def _update_events(row: Trace, events: list[core.Event], seq: int, columns: tuple[str, ...]) -> None:
    """Set `columns` (of _UPDATED_EVENT_COLUMNS, `seq` last) of `row`'s stored events `events` (by
    event id) to theirs, `seq` to `seq`."""
    if not events:
        return
    as_json = Jsonb if connection.vendor == "postgresql" else json.dumps
    fields = attrgetter(*({"from_agent": "from_"}.get(c, c) for c in columns[:-1]))  # a tuple: two at least
    rows = [(*fields(e), seq, row.pk, e.id) for e in events]
    if "attributes" in columns:  # a JSON column: encoded
        at = columns.index("attributes")
        rows = [(*r[:at], as_json(r[at]), *r[at + 1 :]) for r in rows]
    table = connection.ops.quote_name(Event._meta.db_table)
    assignments = ", ".join(f"{connection.ops.quote_name(c)} = %s" for c in columns)
    with connection.cursor() as cursor:
        cursor.executemany(f"UPDATE {table} SET {assignments} WHERE trace_id = %s AND event_id = %s", rows)


@dataclass
class _AgentDiff:
    """A build's agents against the stored rows, kept in the build's order (the rows' pk order).

    `added`: agents not stored; `changed`: stored rows set to their new form (not saved), of which
    `updated` stay in place and the rest are inserted again; `inserted`: what to insert, in order
    (new agents and the stored ones from the first out of place on); `removed`: row pks;
    `fills_in`: every change only adds, and no stored agent moved."""

    added: list[core.Agent]
    changed: list[Agent]
    updated: list[Agent]
    inserted: list[core.Agent | Agent]
    removed: list[int]
    count: int
    fills_in: bool


def _diff_agents(row: Trace, agents: dict[str, core.Agent], seq: int) -> _AgentDiff:
    stored = {a.name: a for a in row.agents.order_by("id")}
    wanted = list(agents)
    kept = [name for name in stored if name in agents]
    in_place = 0
    while in_place < len(kept) and kept[in_place] == wanted[in_place]:
        in_place += 1
    moved = set(kept[in_place:])
    changed: list[Agent] = []
    fills_in = not moved
    for name, agent in agents.items():
        before = stored.get(name)
        if before is None or (
            name not in moved and all(getattr(before, f) == getattr(agent, f) for f in AGENT_COLUMNS)
        ):
            continue
        fills_in &= (
            all(getattr(before, f) in (None, getattr(agent, f)) for f in AGENT_COLUMNS if f != "attributes")
            and before.attributes.items() <= agent.attributes.items()
        )
        for f in AGENT_COLUMNS:
            setattr(before, f, getattr(agent, f))
        before.seq = seq
        changed.append(before)
    return _AgentDiff(
        added=[a for name, a in agents.items() if name not in stored],
        changed=changed,
        updated=[a for a in changed if a.name not in moved],
        inserted=[stored[name] if name in moved else agents[name] for name in wanted[in_place:]],
        removed=[a.pk for name, a in stored.items() if name not in agents],
        count=len(agents),
        fills_in=fills_in,
    )


@dataclass
class _KeyedDiff:
    """Items wanted but not stored (`added`), and pks of rows stored but not wanted (`removed`)."""

    added: list
    removed: list[int]


def _diff_keyed(wanted: Mapping[Any, Any], stored: Mapping[Any, int | None]) -> _KeyedDiff:
    """`stored` pks may be None only for keys still `wanted` (`_stored_edges`)."""
    return _KeyedDiff(
        added=[item for key, item in wanted.items() if key not in stored],
        removed=[cast(int, pk) for key, pk in stored.items() if key not in wanted],
    )


def _set_from_build(row: Trace, build: core.Trace, seq: int, *, event_count: int, agent_count: int) -> None:
    """The trace row's fields, seq, counts and totals as `build` gives them (not saved); rewards
    and metrics merge into the row's."""
    for name in ("name", "system", "topology", "task_id"):
        setattr(row, name, getattr(build, name) or (build.source_id[:200] if name == "name" else ""))
    row.attributes, row.costs = build.attributes, build.costs
    row.rewards, row.metrics = {**row.rewards, **build.rewards}, {**row.metrics, **build.metrics}
    row.reward = headline_reward(row.rewards)
    row.seq, row.event_count, row.agent_count = seq, event_count, agent_count
    duration_s = 0.0
    for event in build.events:
        end = event.t_end if event.t_end is not None else event.t
        if end > duration_s:
            duration_s = end
    usage = trace_usage(build)
    row.total_tokens, row.estimated_tokens, row.duration_s = usage.measured, usage.estimated, duration_s
    row.label_summary = label_summary("", build.labels)
    row.last_event_at = timezone.now()


def _delete(model, pks: list[int]) -> None:
    for chunk in in_chunks(pks):
        model.objects.filter(pk__in=chunk).delete()
