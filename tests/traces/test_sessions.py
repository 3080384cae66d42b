"""Sessions: traces that share `attributes.session_id` (a GenAI conversation, a Claude Code session,
a Codex thread) are listed together, in the order they ran, within the caller's projects only."""

import json

import pytest

from swarmscope.importers import SourceFile
from swarmscope.model import Event, Trace
from webapp.accounts.services import do_get_or_create_project
from webapp.traces import ingest
from webapp.traces.models import Trace as TraceRow

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def _native(source_id: str, session: str | None, started_ns: int | None) -> SourceFile:
    attributes = {}
    if session is not None:
        attributes["session_id"] = session
    if started_ns is not None:
        attributes["start_time_unix_nano"] = started_ns
    trace = Trace(source_format="native", source_id=source_id, name=f"turn {source_id}", attributes=attributes)
    trace.events = [Event(id="e1", t=0.0, type="message", agent="lead", content="hi")]
    return SourceFile(f"{source_id}.json", json.dumps(trace.to_dict()).encode())


@pytest.fixture
def logged_in(client, member):
    client.force_login(member)
    return client


def test_session_page_lists_its_traces_in_the_order_they_ran(logged_in, project):
    # Imported out of order: the page orders by the source's start time, not by arrival.
    ingest.do_import_sources(
        project,
        [
            _native("second", "conv/1", 2_000_000_000),
            _native("first", "conv/1", 1_000_000_000),
            _native("other", "conv-2", 1_500_000_000),
            _native("alone", None, None),
        ],
    )
    assert dict(TraceRow.objects.values_list("source_id", "session_id")) == {
        "second": "conv/1",
        "first": "conv/1",
        "other": "conv-2",
        "alone": "",
    }
    page = logged_in.get("/sessions/conv/1/")
    assert page.status_code == 200
    text = page.content.decode()
    assert text.index("turn first") < text.index("turn second") and "turn other" not in text
    assert logged_in.get("/sessions/no-such/").status_code == 404

    listing = logged_in.get("/?session=conv-2").content.decode().split("<main")[1]
    assert "turn other" in listing and "turn first" not in listing and "session page" in listing
    assert "/sessions/conv/1/" in logged_in.get("/").content.decode()  # the list links a trace to its session

    api = logged_in.get("/api/traces/?session=conv/1").json()
    assert api["count"] == 2 and {r["session_id"] for r in api["results"]} == {"conv/1"}


def test_a_session_spans_only_the_callers_projects(logged_in, project):
    elsewhere = do_get_or_create_project("Someone else's project")
    ingest.do_import_sources(elsewhere, [_native("hidden", "shared-id", 1)])
    assert logged_in.get("/sessions/shared-id/").status_code == 404
    ingest.do_import_sources(project, [_native("mine", "shared-id", 2)])
    text = logged_in.get("/sessions/shared-id/").content.decode()
    assert "turn mine" in text and "turn hidden" not in text
