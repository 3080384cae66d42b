"""A trace ingested span batch by span batch (`span_ingest.do_ingest_spans`, as /v1/traces calls it)
is stored as the one-shot import of all its spans: for every shared, fixture and sample
OpenTelemetry trace and the small benchmark cases, in seeded random batch splits and orders with a
re-sent batch, with the trace built within each request or deferred to `do_derive_spans` after it
(as past SWARMSCOPE_OTLP_SYNC_SPANS), and with GenAI log records arriving between the span batches."""

import dataclasses
import json
import random
import sys

import pytest
from django.db import transaction

from swarmscope.importers import otlp
from tests.swarmscope.importers.test_otel_batches import REPO, SPLITS, arrivals, otel_traces
from tests.traces.test_otlp_logs import as_span_events, without_log_count
from tests.traces.test_otlp_streaming import import_once, stored_form
from webapp.accounts.services import do_get_or_create_project
from webapp.traces import span_ingest
from webapp.traces.models import Trace

sys.path.insert(0, str(REPO / "bench"))
from otlp_cases import CASES, requests  # noqa: E402

SOURCE = "OTLP/HTTP"


@pytest.fixture
def ingest(db, settings, monkeypatch, django_capture_on_commit_callbacks):
    """`ingest(batches, deferred, staged=False)`: each batch (a list of spans, or of log records) in
    its own transaction, as one request; deferred: every build by `do_derive_spans` after the
    request that asks for it; staged: a derivation adding more than 3 events stages them in chunks
    of 3 before it publishes (`_stage_added_events`). Returns the stored form of the trace."""
    asked: list[int] = []
    monkeypatch.setattr(span_ingest, "_enqueue_derive", lambda pk, source: asked.append(pk))
    project = do_get_or_create_project("incremental")

    def run(batches: list[list], deferred: bool, staged: bool = False) -> dict:
        Trace.objects.filter(project=project).delete()
        settings.SWARMSCOPE_OTLP_SYNC_SPANS = 0 if deferred else 10**9
        settings.SWARMSCOPE_OTLP_DERIVE_CHUNK_ROWS = 3 if staged else 10**9
        for batch in batches:
            with django_capture_on_commit_callbacks(execute=True), transaction.atomic():  # one request
                if isinstance(batch[0], otlp.LogRecord):
                    span_ingest.do_ingest_log_records(project, otlp, batch, SOURCE)
                else:
                    span_ingest.do_ingest_spans(project, otlp, batch[0].trace_id, batch, SOURCE)
            with django_capture_on_commit_callbacks(execute=True):  # the worker keeps its derivation
                for pk in dict.fromkeys(asked):
                    span_ingest.do_derive_spans(pk, otlp, SOURCE)
            for pk in dict.fromkeys(asked):
                check_kept_edges(pk)
            asked.clear()
        trace_id = next(b for b in batches if isinstance(b[0], otlp.Span))[0].trace_id
        (row,) = Trace.objects.filter(project=project, source_id=trace_id)
        assert not row.spans_pending and row.staged_at is None
        assert not row.events.filter(seq__gt=row.seq).exists()  # nothing staged is left unpublished
        return stored_form(row)

    return run


def check_kept_edges(trace_pk: int) -> None:
    """A kept derivation's edges are the stored edge rows: every key, and the pk where it has one."""
    kept = span_ingest._DERIVED.get(trace_pk)
    if kept is None:
        return
    rows = {
        (src, dst, type_): pk
        for pk, src, dst, type_ in Trace.objects.get(pk=trace_pk).edges.values_list("pk", "src", "dst", "type")
    }
    assert kept.edges.keys() == rows.keys()
    assert all(pk is None or pk == rows[key] for key, pk in kept.edges.items())


def check_batches(ingest, name: str, spans: list) -> None:
    whole = import_once(spans)
    for seed in range(SPLITS):
        batches = arrivals(spans, random.Random(f"{name}:{seed}"))
        assert ingest(batches, deferred=seed % 2 == 1, staged=seed % 4 == 3) == whole, (name, seed)


def test_shared_traces_ingest_in_batches_as_they_import(ingest, shared_data):
    traces = otel_traces(shared_data)
    assert len(traces) >= 5, sorted(traces)
    for name, spans in traces.items():
        check_batches(ingest, name, spans)


@pytest.mark.parametrize("root", ["tests/fixtures", "samples"])
def test_fixture_and_sample_traces_ingest_in_batches_as_they_import(ingest, root):
    traces = otel_traces(REPO / root)
    assert traces, root
    for name, spans in traces.items():
        check_batches(ingest, name, spans)


@pytest.mark.parametrize("case", ["supervisor", "roundrobin"])
def test_benchmark_cases_ingest_in_batches_as_they_import(ingest, case):
    """The generated cases of bench/otlp_cases.py, decoded from their protobuf requests."""
    spans = [
        span
        for request in requests(CASES[case](0), 10**6)
        for trace_spans in otlp.decode_protobuf(request.SerializeToString()).values()
        for span in trace_spans
    ]
    check_batches(ingest, case, spans)


def test_log_records_between_span_batches_join_their_spans(ingest, fixtures):
    """Content on the logs signal, in batches of its own among the span batches (before, between
    or after the spans it belongs to): the trace of the same content written as span events."""
    (spans,) = otlp.split(json.loads((fixtures / "otlp_multi_agent_spans.json").read_text())).values()
    logs_doc = json.loads((fixtures / "otlp_multi_agent_logs.json").read_text())
    records = otlp.split_logs(logs_doc)
    whole = import_once(as_span_events(spans, logs_doc))
    for seed in range(SPLITS):
        rng = random.Random(f"logs:{seed}")
        span_batches = arrivals(spans, rng)
        cut = rng.randint(1, len(records) - 1)
        batches = [*span_batches, records[:cut], records[cut:]]
        rng.shuffle(batches)
        assert without_log_count(ingest(batches, deferred=seed % 2 == 1, staged=seed % 4 == 3)) == whole, seed


def test_a_derivation_diffs_again_when_the_trace_was_written_meanwhile(ingest, fixtures, monkeypatch, settings):
    """`do_derive_spans` diffs outside the write lock; when another derivation writes the trace
    between that diff and its own write, it diffs again under the lock instead of writing a stale
    difference (which would insert the other's events a second time)."""
    (spans,) = otlp.split(json.loads((fixtures / "otlp_genai_small.json").read_text())).values()
    ordered = sorted(spans, key=lambda s: s.end_ns)
    ingest([ordered[:3]], deferred=True)
    (row,) = Trace.objects.filter(project__name="incremental")
    span_ingest.do_ingest_spans(row.project, otlp, row.source_id, ordered[3:], SOURCE)  # pending
    plan_build, plans = span_ingest._plan_build, []

    def racing(trace, build, memo=None):
        plans.append(trace.seq)
        plan = plan_build(trace, build, memo)
        if len(plans) == 1:  # another derivation of the same spans writes first
            with transaction.atomic():
                span_ingest._store_build(Trace.objects.select_for_update().get(pk=trace.pk), build)
        return plan

    monkeypatch.setattr(span_ingest, "_plan_build", racing)
    assert span_ingest.do_derive_spans(row.pk, otlp, SOURCE) is not None
    assert plans == [row.seq, row.seq, row.seq + 1]  # ours, the other's, ours again under the lock
    assert stored_form(Trace.objects.get(pk=row.pk)) == import_once(spans)


def test_a_kept_derivation_maps_only_new_spans_into_the_same_trace(ingest, monkeypatch):
    """With the worker's last derivation kept (`span_ingest._DERIVED`), the next one reads only the
    spans stored since, never diffs against the stored event rows nor reads the edge rows back, and
    stores the one-shot import."""
    spans = [
        span
        for request in requests(CASES["supervisor"](0), 10**6)
        for trace_spans in otlp.decode_protobuf(request.SerializeToString()).values()
        for span in trace_spans
    ]
    ordered = sorted(spans, key=lambda s: s.end_ns)
    cut = len(ordered) // 2
    reads = []
    from_dict = span_ingest.Span.from_dict
    monkeypatch.setattr(span_ingest.Span, "from_dict", lambda data: reads.append(1) or from_dict(data))

    def no_row_diff(row, events):
        raise AssertionError("diffed against the stored rows")

    ingest([ordered[:cut]], deferred=True)  # first derivation: reads every span, diffs the rows
    (row,) = Trace.objects.filter(project__name="incremental")
    assert span_ingest._DERIVED[row.pk].seq == row.seq
    monkeypatch.setattr(span_ingest, "_diff_events", no_row_diff)
    stored_edges, edges_kept = span_ingest._stored_edges, []

    def recording(trace, memo, wanted):
        found = stored_edges(trace, memo, wanted)
        edges_kept.append(memo is not None and found is memo.edges)
        return found

    monkeypatch.setattr(span_ingest, "_stored_edges", recording)
    reads.clear()
    span_ingest.do_ingest_spans(row.project, otlp, row.source_id, ordered[cut:], SOURCE)
    ingested = len(reads)  # the request decodes its own new spans once
    assert span_ingest.do_derive_spans(row.pk, otlp, SOURCE) is not None
    assert len(reads) - ingested == len(ordered) - cut  # the derivation read only the new spans
    assert edges_kept == [True]  # nor the stored edges
    assert stored_form(Trace.objects.get(pk=row.pk)) == import_once(spans)
    check_kept_edges(row.pk)


def test_a_kept_derivation_is_not_used_for_another_trace_or_after_another_write(ingest, fixtures):
    """A derivation kept for a trace is dropped when the row is another trace (same pk, other
    creation time) and not used to diff when the trace was written since (its seq moved)."""
    (spans,) = otlp.split(json.loads((fixtures / "otlp_genai_small.json").read_text())).values()
    ordered = sorted(spans, key=lambda s: s.end_ns)
    ingest([ordered[:3]], deferred=True)
    (row,) = Trace.objects.filter(project__name="incremental")
    kept = span_ingest._DERIVED[row.pk]
    span_ingest._DERIVED[row.pk] = dataclasses.replace(kept, seq=kept.seq - 1)  # the trace moved on since
    span_ingest.do_ingest_spans(row.project, otlp, row.source_id, ordered[3:], SOURCE)
    assert span_ingest.do_derive_spans(row.pk, otlp, SOURCE) is not None
    assert stored_form(Trace.objects.get(pk=row.pk)) == import_once(spans)
    stale = dataclasses.replace(kept, created_at=None, spans=[], raw={}, stored={}, position={})
    span_ingest._DERIVED[row.pk] = stale  # as if kept for a deleted trace whose pk this one got
    Trace.objects.filter(pk=row.pk).update(spans_pending=True)
    assert span_ingest.do_derive_spans(row.pk, otlp, SOURCE) is not None  # (with no spans it would fail)
    assert stored_form(Trace.objects.get(pk=row.pk)) == import_once(spans)
