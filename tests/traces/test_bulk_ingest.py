"""Large batches staged in bounded transactions (webapp.traces.ingest): stored once, visible only
when complete, nothing left by a failure or a crash between chunks, and other projects' writers
interleave with the chunks instead of waiting out the whole batch."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import OperationalError, connection
from django.test import Client

from swarmscope import ingest as ingest_plan
from swarmscope.model import Trace as CoreTrace
from swarmscope.model import TraceValidationError
from tests.synthetic import synthetic_trace
from webapp.accounts.services import do_add_member, do_create_token, do_get_or_create_project
from webapp.traces import api, ingest, services
from webapp.traces.models import Agent, Edge, Event, Label, Trace
from webapp.web.api import parse_body

pytestmark = [pytest.mark.services]

#: Rows per staged transaction in these tests: a 600-event synthetic trace takes over a dozen chunks.
CHUNK = 100


class SimulatedCrash(BaseException):
    """Fault injection: the writer's process dies between two chunks (nothing of it runs after)."""


@pytest.fixture
def chunked(settings):
    settings.SWARMSCOPE_INGEST_CHUNK_ROWS = CHUNK
    return settings


def big_trace(n_events: int = 600, source_id: str = "bulk") -> CoreTrace:
    trace = synthetic_trace(max(1, n_events // 20), n_events, seed=3)
    trace.source_format, trace.source_id = "native", source_id
    return trace


def stored_rows(trace_id: int) -> dict[str, int]:
    """Every row of the trace, published or not."""
    return {m.__name__: m.objects.filter(trace_id=trace_id).count() for m in (Event, Edge, Agent, Label)}


def visible(trace_id: int) -> dict:
    """What readers see of the trace: its snapshot (without metrics) and its core form."""
    row = Trace.objects.get(pk=trace_id)
    snapshot = services.get_snapshot(row, with_metrics=False)
    snapshot["trace"].pop("live")
    return {"snapshot": snapshot, "core": services.to_core_trace(row).to_dict()}


@pytest.mark.django_db
def test_a_chunked_batch_is_stored_as_the_same_batch_in_one_transaction_would_be(chunked, project, monkeypatch):
    fragment = big_trace()
    assert ingest.staged_rows(ingest.plan_batch(ingest.Stored(), fragment)) > 10 * CHUNK
    chunks: list[int] = []
    seen_during: list[dict] = []

    def observe(stage, trace_id, chunk):
        chunks.append(chunk)
        if chunk == 3:
            seen_during.append(visible(trace_id))

    monkeypatch.setattr(ingest, "fault_injection_point", observe)
    chunked_result = ingest.do_ingest(project, fragment)
    chunked.SWARMSCOPE_INGEST_CHUNK_ROWS = 10**9
    other = do_get_or_create_project("One transaction")
    whole = ingest.do_ingest(other, fragment)

    assert chunks == list(range(len(chunks))) and len(chunks) > 10
    assert seen_during[0]["snapshot"]["seq"] == 0 and seen_during[0]["core"]["events"] == []
    assert seen_during[0]["snapshot"]["events"] == [] and seen_during[0]["snapshot"]["trace"]["event_count"] == 0
    assert chunked_result.seq == whole.seq == 1
    assert chunked_result.events_added == whole.events_added == len(fragment.events)
    assert services.to_core_trace(chunked_result.trace).to_dict() == services.to_core_trace(whole.trace).to_dict()
    assert stored_rows(chunked_result.trace.pk) == stored_rows(whole.trace.pk)
    assert Trace.objects.get(pk=chunked_result.trace.pk).staged_at is None
    snapshot = services.get_snapshot(chunked_result.trace, with_metrics=False)
    assert len({e["id"] for e in snapshot["events"]}) == len(snapshot["events"]) == len(fragment.events)


@pytest.mark.django_db
def test_a_failure_between_chunks_leaves_nothing_visible_and_nothing_stored(chunked, project, monkeypatch):
    first = big_trace(600)
    first.events, first.edges, first.labels = first.events[:40], [], []
    stored = ingest.do_ingest(project, first).trace
    before, rows_before = visible(stored.pk), stored_rows(stored.pk)

    def fail(stage, trace_id, chunk):
        if chunk == 4:
            raise OperationalError("disk I/O error (injected)")

    monkeypatch.setattr(ingest, "fault_injection_point", fail)
    with pytest.raises(OperationalError):
        ingest.do_ingest(project, big_trace(600))
    assert visible(stored.pk) == before
    assert stored_rows(stored.pk) == rows_before
    assert Trace.objects.get(pk=stored.pk).staged_at is None
    # a trace the failed batch created is gone with it
    with pytest.raises(OperationalError):
        ingest.do_ingest(project, big_trace(600, source_id="new one"))
    assert list(Trace.objects.filter(project=project).values_list("pk", flat=True)) == [stored.pk]
    assert Event.objects.exclude(trace_id=stored.pk).count() == 0


@pytest.mark.django_db
def test_a_crash_between_chunks_is_invisible_refuses_writers_then_is_cleaned_up(chunked, project, member, monkeypatch):
    """Fault injection: the writer dies after its third chunk; its staged rows stay in the database
    but no reader sees them, writers of the trace get 503 until the staging is abandoned, and the
    next write then deletes them and stores the batch exactly once."""
    first = big_trace(600)
    first.events, first.edges, first.labels = first.events[:40], [], []
    stored = ingest.do_ingest(project, first).trace
    before = visible(stored.pk)

    def crash(stage, trace_id, chunk):
        if chunk == 2:
            raise SimulatedCrash()

    monkeypatch.setattr(ingest, "fault_injection_point", crash)
    monkeypatch.setattr(ingest, "discard_staged", lambda *args, **kwargs: None)  # a dead process cleans nothing
    with pytest.raises(SimulatedCrash):
        ingest.do_ingest(project, big_trace(600))
    monkeypatch.undo()
    chunked.SWARMSCOPE_INGEST_CHUNK_ROWS = CHUNK
    row = Trace.objects.get(pk=stored.pk)
    assert row.staged_at is not None
    assert Event.objects.filter(trace=row, seq__gt=row.seq).count() == 3 * CHUNK  # staged, unpublished
    assert visible(stored.pk) == before

    token = do_create_token(member, project, "bulk")[1]
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    one = {"id": "late", "t": 1.0, "type": "message", "agent": "a0"}
    answer = client.post(f"/api/traces/{stored.pk}/events/", json.dumps([one]), content_type="application/json")
    assert answer.status_code == 503 and answer.json()["code"] == "trace_busy"
    assert int(answer["Retry-After"]) >= 1
    assert visible(stored.pk) == before

    chunked.SWARMSCOPE_INGEST_STAGE_TIMEOUT_S = 0  # the crashed writer's staging is now abandoned
    result = ingest.do_ingest(project, big_trace(600))
    assert result.seq == 2 and result.events_added == 600 - 40
    events = services.get_snapshot(result.trace, with_metrics=False)["events"]
    assert [e["id"] for e in events] == [e.id for e in big_trace(600).events]
    assert Event.objects.filter(trace=row).count() == 600
    assert Event.objects.filter(trace=row, seq__gt=result.seq).count() == 0


@pytest.fixture
def two_projects(transactional_db, django_user_model):
    """(Client, project) for two projects, each with an admin and an API token."""
    clients = []
    for name in ("Big batch", "Small writes"):
        project = do_get_or_create_project(name)
        user = django_user_model.objects.create_user(f"writer-{len(clients)}", password="writer-password-1")
        do_add_member(project, user, "admin")
        token = do_create_token(user, project, "bulk")[1]
        clients.append((Client(HTTP_AUTHORIZATION=f"Bearer {token}"), project))
    return clients


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(300)
def test_another_projects_small_writes_interleave_with_a_big_batch(chunked, two_projects):
    """Two projects on one database (SQLite: one write lock): a big batch in one thread, 1-event
    batches to another project in a second. The big batch waits at each chunk boundary until a
    small write has been answered, which only happens if no lock is held between chunks: every
    small write answers 2xx, the big batch lands complete and once, and every small event once."""
    (big_client, _), (small_client, _) = two_projects
    fragment = big_trace(600)
    body = json.dumps(
        {
            "name": "bulk",
            "events": [e.to_dict() for e in fragment.events],
            "edges": [e.to_dict() for e in fragment.edges],
        }
    )
    created = small_client.post("/api/traces/", json.dumps({"name": "small"}), content_type="application/json")
    small_trace = created.json()["trace"]["id"]
    answered = threading.Condition()
    small_statuses: list[int] = []
    done = threading.Event()
    waits: list[bool] = []
    big_answer: list = []

    def wait_for_a_small_write(stage, trace_id, chunk):
        with answered:
            target = len(small_statuses) + 1
            waits.append(answered.wait_for(lambda: len(small_statuses) >= target, timeout=60))

    def small_writer():
        try:
            n = 0
            while not done.is_set():
                event = {"id": f"s{n}", "t": n * 0.1, "type": "message", "agent": "solo"}
                answer = small_client.post(
                    f"/api/traces/{small_trace}/events/", json.dumps([event]), content_type="application/json"
                )
                with answered:
                    small_statuses.append(answer.status_code)
                    answered.notify_all()
                n += 1
        finally:
            connection.close()

    def big_writer():
        try:
            big_answer.append(big_client.post("/api/traces/", body, content_type="application/json"))
        finally:
            done.set()
            connection.close()

    original, ingest.fault_injection_point = ingest.fault_injection_point, wait_for_a_small_write
    try:
        threads = [threading.Thread(target=small_writer), threading.Thread(target=big_writer)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=240)
    finally:
        ingest.fault_injection_point = original

    assert big_answer and big_answer[0].status_code == 201, big_answer and big_answer[0].content[:500]
    assert len(waits) > 10 and all(waits), f"{waits.count(False)} of {len(waits)} chunk boundaries saw no small write"
    assert small_statuses and set(small_statuses) == {200}
    big = Trace.objects.get(pk=big_answer[0].json()["trace"]["id"])
    assert big.event_count == len(fragment.events) and big.seq == 1 and big.staged_at is None
    assert Event.objects.filter(trace=big).values("event_id").distinct().count() == len(fragment.events)
    assert Event.objects.filter(trace=big).count() == len(fragment.events)
    assert Edge.objects.filter(trace=big).count() == len({(e.src, e.dst, e.type) for e in fragment.edges})
    small = Trace.objects.get(pk=small_trace)
    assert small.event_count == len(small_statuses) == small.seq - 1  # seq 1: its creation
    assert sorted(Event.objects.filter(trace=small).values_list("event_id", flat=True)) == sorted(
        f"s{n}" for n in range(len(small_statuses))
    )


@pytest.mark.parametrize(
    ("place", "bad"),
    [
        ("content", "a\x00b"),
        ("content", "lone \ud800"),
        ("attributes", {"k\x00": 1}),
        ("attributes", {"k": ["\udfff"]}),
    ],
)
def test_check_storable_finds_a_bad_string_deep_in_a_big_batch(place, bad):
    fragment = big_trace(12000)
    assert len(fragment.events) > 2 * ingest_plan._CLEAN_SLICE
    index = 2 * ingest_plan._CLEAN_SLICE + 7
    setattr(fragment.events[index], place, bad)
    with pytest.raises(TraceValidationError) as refused:
        ingest_plan.check_storable(fragment)
    assert (refused.value.index, refused.value.field, refused.value.event_id) == (
        index,
        place,
        fragment.events[index].id,
    )


def test_check_storable_passes_a_literal_backslash_u0000():
    fragment = big_trace(600)
    fragment.events[3].content = "the JSON escape \\u0000 written out"
    ingest_plan.check_storable(fragment)


@pytest.mark.django_db
def test_an_upload_over_the_limit_is_refused_with_413_and_stores_nothing(
    client, member, api_client, fixtures, settings
):
    data = (fixtures / "native_small.json").read_bytes()
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = len(data) // 2
    client.force_login(member)
    with open(fixtures / "native_small.json", "rb") as file:
        page = client.post("/upload/", {"file": [file]})
    assert page.status_code == 413 and "Upload refused" in page.content.decode()
    api = api_client.post("/api/traces/upload/?filename=n.json", data, content_type="application/json")
    assert api.status_code == 413 and "SWARMSCOPE_MAX_UPLOAD_BYTES" in api.json()["error"]
    assert Trace.objects.count() == 0
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = len(data) * 4
    with open(fixtures / "native_small.json", "rb") as file:
        assert "imported as trace" in client.post("/upload/", {"file": [file]}).content.decode()
    assert Trace.objects.count() == 1


def fixture_events(fixtures) -> list[dict]:
    return json.loads((fixtures / "native_small.json").read_text())["events"]


def test_an_events_array_decoded_one_event_at_a_time_equals_the_whole_document(fixtures):
    events = fixture_events(fixtures)
    bodies = [
        json.dumps(events).encode(),
        json.dumps(events, indent=2, ensure_ascii=False).encode(),
        b" \n[ ]\n",
        json.dumps([e.to_dict() for e in big_trace(600).events]).encode(),
    ]
    for body in bodies:
        whole = api._fragment_from_batch(Trace(source_format="api", source_id="x"), parse_body(body)).events
        assert api.events_of_array(body) == whole


@pytest.mark.parametrize(
    "body",
    [
        b'[{"id": "a", "t": 0, "type": "message", "agent": "x"}',  # truncated
        b'[{"id": "a", "t": 0, "type": "message", "agent": "x"}] trailing',
        b'[{"id": "a", "t": NaN, "type": "message", "agent": "x"}]',
        b'[{"id": "a", "t": 0, "type": "message", "agent": "x", "content": "\\u0000"}]',
        b'[{"id": "a", "t": 0, "type": "message", "agent": "x", "attributes": ' + b"[" * 120 + b"]" * 120 + b"}]",
        b'[{"id": "a", "t": 0, "type": "no such type", "agent": "x"}]',
        b'{"events": []}',
        b"\xef\xbb\xbf[]",
    ],
)
def test_any_other_body_goes_to_the_whole_document_parser(body):
    assert api.events_of_array(body) is None


@pytest.mark.django_db
def test_the_api_names_a_bad_event_of_a_big_array_as_before(api_client, fixtures):
    created = api_client.post("/api/traces/", json.dumps({"name": "t"}), content_type="application/json")
    events = [e.to_dict() for e in big_trace(600).events]
    events[431]["t_end"] = -1.0
    answer = api_client.post(
        f"/api/traces/{created.json()['trace']['id']}/events/", json.dumps(events), content_type="application/json"
    )
    assert answer.status_code == 400
    assert (answer.json()["index"], answer.json()["field"]) == (431, "t_end")
