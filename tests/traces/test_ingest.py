"""The write path: identity rules, all-or-nothing batches, and the live-delta invariant."""

import copy
import json

import pytest

from swarmscope import model as core
from swarmscope import protocol
from swarmscope.importers import SourceFile
from swarmscope.ingest import IngestConflict
from webapp.traces import ingest, services
from webapp.traces.models import Event, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def native(fixtures):
    return json.loads((fixtures / "native_small.json").read_text())


@pytest.fixture
def deltas(monkeypatch):
    """Every delta the write path broadcasts, in order (the real payloads, captured after commit)."""
    sent = []
    monkeypatch.setattr(ingest, "broadcast_trace_delta", lambda trace_id, delta: sent.append(delta))
    return sent


def ingest_events(project, trace, events, edges=()):
    fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id)
    fragment.events = [core.event_from_dict(e, i) for i, e in enumerate(events)]
    fragment.edges = [core.edge_from_dict(e, i) for i, e in enumerate(edges)]
    return ingest.do_ingest(project, fragment, trace=trace)


def test_import_twice_duplicates_nothing(project, native):
    first = ingest.do_import_sources(project, [SourceFile("a.json", json.dumps(native).encode())])
    second = ingest.do_import_sources(project, [SourceFile("a.json", json.dumps(native).encode())])
    assert first[0].traces[0].pk == second[0].traces[0].pk
    trace = Trace.objects.get()
    assert (trace.event_count, trace.agent_count, trace.seq) == (11, 3, 1)
    assert Event.objects.count() == 11 and trace.edges.count() == 9


def test_reimport_with_only_a_new_reward_is_a_write_and_refreshes_metrics(
    project, native, monkeypatch, django_capture_on_commit_callbacks
):
    enqueued = []
    monkeypatch.setattr(ingest, "enqueue", lambda name, *args: enqueued.append((name, *args)))
    ingest.do_import_sources(project, [SourceFile("a.json", json.dumps(native).encode())])
    trace = Trace.objects.get()
    rescored = {**native, "rewards": {**native["rewards"], "team": 0.25}}
    with django_capture_on_commit_callbacks(execute=True):
        outcome = ingest.do_import_sources(project, [SourceFile("a.json", json.dumps(rescored).encode())])
    trace.refresh_from_db()
    assert trace.rewards["team"] == 0.25 and trace.seq == 2
    assert "nothing new" not in outcome[0].lines[0]
    assert ("webapp.traces.tasks.refresh_metrics", trace.pk) in enqueued

    enqueued.clear()
    with django_capture_on_commit_callbacks(execute=True):
        again = ingest.do_import_sources(project, [SourceFile("a.json", json.dumps(rescored).encode())])
    assert "already stored, nothing new" in again[0].lines[0] and not enqueued


def test_event_adding_t_end_merges_and_contradiction_refuses_whole_batch(
    project, native, deltas, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        trace = ingest.do_ingest(project, core.trace_from_dict(native)).trace
        open_event = {"id": "live-1", "t": 7.0, "type": "message", "agent": "adder", "to": "orchestrator"}
        ingest_events(project, trace, [open_event])
        closed = ingest_events(project, trace, [{**open_event, "t_end": 7.5, "attributes": {"ok": True}}])
    assert closed.events_updated == 1 and closed.events_added == 0
    assert Event.objects.get(event_id="live-1").t_end == 7.5
    assert deltas[-1]["events"][0]["t_end"] == 7.5 and deltas[-1]["seq"] == closed.seq

    before = (Event.objects.count(), Trace.objects.get().seq)
    with pytest.raises(IngestConflict) as refused:
        ingest_events(
            project,
            trace,
            [
                {"id": "new-one", "t": 8.0, "type": "message", "agent": "adder"},
                {**open_event, "agent": "checker"},
            ],
        )
    assert refused.value.error.as_dict()["index"] == 1
    assert refused.value.error.field == "agent"
    assert (Event.objects.count(), Trace.objects.get().seq) == before
    assert not Event.objects.filter(event_id="new-one").exists()


def test_resent_identical_event_is_a_no_op(project, native, deltas, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        trace = ingest.do_ingest(project, core.trace_from_dict(native)).trace
        again = ingest_events(project, trace, [native["events"][3]])
    assert not again.changed and again.seq == 1 and len(deltas) == 1


def test_edge_to_unknown_event_is_refused_with_its_index(project, native):
    trace = ingest.do_ingest(project, core.trace_from_dict(native)).trace
    with pytest.raises(core.TraceValidationError) as error:
        ingest_events(
            project,
            trace,
            [{"id": "x1", "t": 9, "type": "message", "agent": "adder"}],
            edges=[{"src": "e1", "dst": "x1", "type": "causal"}, {"src": "x1", "dst": "nowhere", "type": "message"}],
        )
    assert (error.value.kind, error.value.index, error.value.field) == ("edge", 1, "dst")
    assert not Event.objects.filter(event_id="x1").exists()


def test_snapshot_plus_deltas_equals_later_snapshot(project, native, deltas, django_capture_on_commit_callbacks):
    """The live protocol's invariant (docs/architecture.md): snapshot(t0) + deltas == snapshot(t1)."""
    half = copy.deepcopy(native)
    half["events"], half["edges"] = native["events"][:5], native["edges"][:2]
    with django_capture_on_commit_callbacks(execute=True):
        trace = ingest.do_ingest(project, core.trace_from_dict(half)).trace
        snapshot0 = services.get_snapshot(trace, with_metrics=False)
        ingest_events(project, trace, native["events"][5:8])
        ingest_events(project, trace, [{**native["events"][8], "t_end": None}], edges=native["edges"][2:6])
        ingest_events(project, trace, [native["events"][8]] + native["events"][9:], edges=native["edges"][6:])
        resumed = services.get_delta_since(trace, snapshot0["seq"])
    snapshot1 = services.get_snapshot(trace, with_metrics=False)
    applied = snapshot0
    for delta in deltas[1:]:
        applied = protocol.apply_delta(applied, delta)
    strip = lambda s: protocol.canonical({k: v for k, v in s.items() if k != "trace"})  # noqa: E731
    assert strip(applied) == strip(snapshot1)
    assert strip(protocol.apply_delta(snapshot0, resumed)) == strip(snapshot1)
    assert snapshot1["seq"] == 4 and len(snapshot1["events"]) == 11


def test_computed_metrics_never_overwrite_imported_ones(project, native):
    trace = ingest.do_ingest(project, core.trace_from_dict(native)).trace
    computed = services.get_computed_metrics(trace)
    trace.refresh_from_db()
    assert trace.metrics == {"task_success": 1}
    assert computed["critical_steps"] > 0
    assert trace.computed_metrics_seq == trace.seq


def test_round_trip_native_export(project, native):
    trace = ingest.do_ingest(project, core.trace_from_dict(native)).trace
    exported = services.to_core_trace(trace).to_dict()
    assert exported["events"] == core.trace_from_dict(native).to_dict()["events"]
    assert {tuple(e.values()) for e in exported["edges"]} == {tuple(e.values()) for e in native["edges"]}
    assert exported["labels"] == native["labels"]


@pytest.mark.parametrize(
    "where, named",
    [
        (lambda doc: doc["events"][1].update(content="before\u0000after"), "event 1, id 'e2', field 'content'"),
        (lambda doc: doc["events"][0].setdefault("attributes", {}).update(note=["ok", "\u0000"]), "field 'attributes'"),
        (lambda doc: doc.update(name="trace\u0000name"), "field 'name'"),
    ],
)
def test_a_nul_character_is_refused_naming_where_and_nothing_is_stored(project, native, where, named):
    # PostgreSQL's text and jsonb cannot hold U+0000: refused before any write, on every database.
    where(native)
    [outcome] = ingest.do_import_sources(project, [SourceFile("nul.json", json.dumps(native).encode())])
    assert outcome.error and named in outcome.error and "NUL" in outcome.error
    assert not Trace.objects.exists() and not Event.objects.exists()
