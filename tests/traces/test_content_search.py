"""Full-text search over event content and tool names (webapp.traces.search), through the trace
list's service: the same behaviour on SQLite (FTS5) and PostgreSQL (full-text search)."""

import re

import pytest
from django.db import connection

from swarmscope import model as core
from swarmscope.importers import SourceFile
from swarmscope.ingest import IngestConflict
from webapp.traces import ingest, search, services
from webapp.traces.models import Event, Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def found(project, query: str, **filters) -> list[str]:
    listed = services.list_traces([project.pk], filters=services.ListFilters(query=query, **filters))
    return sorted(t.source_id for t in listed)


def fragment(source_id: str, events: list[dict]) -> core.Trace:
    trace = core.Trace(source_format="native", source_id=source_id, name=source_id)
    trace.events = [core.event_from_dict(e, i) for i, e in enumerate(events)]
    return trace


EVENTS = [
    {"id": "q", "t": 0.0, "type": "message", "agent": "user", "to": "planner", "content": "Plan a trip to Lisbon"},
    {
        "id": "call",
        "t": 1.0,
        "type": "tool_call",
        "agent": "planner",
        "tool": "weather_lookup",
        "content": '{"city": "Zanzibar", "units": "metric"}',
    },  # fmt: skip
    {
        "id": "res",
        "t": 2.0,
        "type": "tool_result",
        "agent": "planner",
        "tool": "weather_lookup",
        "content": "Sunny, 31 C; <script>alert(1)</script> quokka sightings likely",
    },  # fmt: skip
    {
        "id": "ans",
        "t": 3.0,
        "type": "message",
        "agent": "planner",
        "to": "user",
        "content": "Pack light: Zanzibar will be hot. Heliotrope skies.",
    },  # fmt: skip
]


@pytest.fixture
def traces(project):
    ingest.do_ingest(project, fragment("trip", EVENTS))
    ingest.do_ingest(project, fragment("other", [{**EVENTS[0], "content": "Plan a trip to Oslo"}]))


def test_words_of_messages_tool_arguments_and_results_find_their_trace(project, traces):
    assert found(project, "heliotrope") == ["trip"]  # a message, any case
    assert found(project, "zanzibar") == ["trip"]  # a tool call's arguments
    assert found(project, "QUOKKA") == ["trip"]  # a tool's result
    assert found(project, "weather_lookup") == ["trip"]  # a tool's name
    assert found(project, "trip") == ["other", "trip"]
    assert found(project, "oslo") == ["other"]
    # every word, in one event: "oslo" and "zanzibar" are in two traces' events, never together
    assert found(project, "zanzibar hot") == ["trip"] and found(project, "oslo zanzibar") == []
    assert found(project, "quok") == []  # words, not substrings
    # the search box's punctuation and FTS/tsquery syntax are plain text, never an error
    for text in ['"zanzibar', "zanzibar*", "NEAR(zanzibar hot)", "zanzibar OR", "a & !b | c:*", "'", "()"]:
        services.list_traces([project.pk], filters=services.ListFilters(query=text)).count()
    assert found(project, '"Zanzibar!"') == ["trip"]


def test_a_word_ending_in_a_star_is_a_prefix(project, traces):
    assert search.query_words("Zanz*, hot * q**") == ["zanz*", "hot", "q*"]
    assert found(project, "quok*") == ["trip"]  # "quok" alone is no word of the trip (above)
    assert found(project, "zanz* hot") == ["trip"]  # with a whole word, in one event
    assert found(project, "tri* osl*") == ["other"]
    assert found(project, "zanzibarx*") == []
    trip = Trace.objects.get(source_id="trip")
    hit = search.get_search_hits([trip.pk], "helio*")[trip.pk]
    assert hit.event_id == "ans" and ("Heliotrope", True) in hit.snippet


def test_hits_give_the_first_matching_event_and_a_marked_snippet(project, traces):
    trip = Trace.objects.get(source_id="trip")
    hits = search.get_search_hits([trip.pk], "zanzibar")
    hit = hits[trip.pk]
    assert (hit.event_id, hit.type, hit.tool, hit.agent, hit.matches) == (
        "call",
        "tool_call",
        "weather_lookup",
        "planner",
        2,
    )
    assert ("Zanzibar", True) in hit.snippet and "metric" in hit.snippet_text
    assert search.get_search_hits([trip.pk], "heliotrope")[trip.pk].event_id == "ans"
    assert search.get_search_hits([trip.pk], "oslo") == {}


def test_the_list_page_shows_the_hit_escaped_and_links_the_trace_at_the_event(client, member, project, traces):
    client.force_login(member)
    body = client.get("/", {"q": "quokka"}).content.decode()
    trip = Trace.objects.get(source_id="trip")
    assert f'href="/traces/{trip.pk}/?event=res&amp;find=quokka"' in body  # the trace page marks the word
    assert "<mark>quokka</mark>" in body
    assert "<script>alert" not in body and "alert(1)" in body
    if connection.vendor == "sqlite":  # PostgreSQL's ts_headline leaves out what looks like a tag
        assert "&lt;script&gt;alert(1)" in body
    assert "Oslo" not in body  # the other trace is not listed


def test_a_refused_batch_leaves_nothing_in_the_index(project, traces):
    trip = Trace.objects.get(source_id="trip")
    new = {"id": "new", "t": 4.0, "type": "message", "agent": "planner", "content": "wombat"}
    contradiction = {**EVENTS[0], "content": "something else"}
    with pytest.raises(IngestConflict):
        ingest.do_ingest(project, fragment("trip", [new, contradiction]), trace=trip)
    assert found(project, "wombat") == []
    ingest.do_ingest(project, fragment("trip", [new]), trace=trip)
    assert found(project, "wombat") == ["trip"]


def test_unpublished_rows_are_not_found_and_deleted_traces_leave_the_index(project, traces):
    trip = Trace.objects.get(source_id="trip")
    Event.objects.filter(trace=trip, event_id="ans").update(seq=trip.seq + 1)  # as a staged chunk's rows
    assert found(project, "heliotrope") == []
    Trace.objects.filter(source_id="other").delete()
    assert found(project, "oslo") == [] and found(project, "lisbon") == ["trip"]
    if connection.vendor == "sqlite":  # the external-content index agrees with the events row for row
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {search.FTS_TABLE} ({search.FTS_TABLE}, rank) VALUES ('integrity-check', 1)")


def test_the_sqlite_index_passes_its_integrity_check_through_a_streamed_otlp_trace(
    api_client, fixtures, settings, monkeypatch, django_capture_on_commit_callbacks
):
    """Spans stream in two at a time (the time origin and events rewritten as spans arrive), many of
    them events with neither content nor tool; FTS5's own integrity-check (rank 1: the index
    against the events table, row by row) holds after every request and after the trace is deleted."""
    from tests.traces.test_otlp_streaming import _file_traces, stream  # noqa: PLC0415
    from webapp.traces.tasks import derive_spans  # noqa: PLC0415

    if connection.vendor != "sqlite":
        pytest.skip("FTS5 is SQLite's index (PostgreSQL's GIN index is an expression index, kept by the database)")

    def integrity_check():
        with connection.cursor() as cursor:
            cursor.execute(f"INSERT INTO {search.FTS_TABLE} ({search.FTS_TABLE}, rank) VALUES ('integrity-check', 1)")

    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 2
    monkeypatch.setattr(derive_spans, "apply_async", lambda args, **options: derive_spans.apply(args=args))
    (spans,) = _file_traces([fixtures / "otlp_genai_small.json"])
    spans.sort(key=lambda span: span.end_ns)
    for i in range(0, len(spans), 2):
        with django_capture_on_commit_callbacks(execute=True):
            stream(api_client, [spans[i : i + 2]], ["protobuf"])
        integrity_check()
    trace = Trace.objects.get(identity_key=f"otlp:{spans[0].trace_id}")
    assert trace.events.filter(content__isnull=True, tool__isnull=True).exists()  # rows that add no word
    trace.delete()
    integrity_check()


@pytest.mark.django_db(transaction=True)  # PostgreSQL creates no index in a transaction with pending FK checks
def test_the_index_is_rebuilt_from_stored_events_where_missing(project, traces):
    with connection.cursor() as cursor:
        search.uninstall(cursor.execute, connection.vendor)
    assert not search.index_installed()
    search.ensure_index()  # post_migrate; the migration calls the same install
    assert search.index_installed()
    assert found(project, "zanzibar") == ["trip"] and found(project, "oslo") == ["other"]


def test_a_word_of_a_real_session_finds_that_session_at_its_event(project, shared_data):
    files = [shared_data / "claude-code" / name for name in ("tool_heavy.jsonl", "short.jsonl")]
    ingest.do_import_sources(project, [SourceFile(f.name, f.read_bytes()) for f in files])
    holding = [t for t in Trace.objects.all() if re.search(r"\bscrolling\b", _text(t))]
    assert len(holding) == 1  # the word is in one of the two sessions only
    heavy = holding[0]
    assert found(project, "scrolling") == [heavy.source_id]
    hit = search.get_search_hits([heavy.pk], "scrolling")[heavy.pk]
    first = next(
        e for e in heavy.events.order_by("position") if re.search(r"\bscrolling\b", e.content or "", re.IGNORECASE)
    )
    assert hit.event_id == first.event_id
    assert any(marked and text.lower() == "scrolling" for text, marked in hit.snippet)


def _text(trace: Trace) -> str:
    return " ".join((e.content or "").lower() for e in trace.events.all())
