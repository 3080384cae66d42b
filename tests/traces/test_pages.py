"""Server-rendered pages: login, trace list (search, pagination, empty state), trace page, upload."""

import json
import re

import pytest

from swarmscope.importers import SourceFile
from webapp.traces import ingest

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def logged_in(client, member):
    client.force_login(member)
    return client


def test_pages_need_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_empty_state_then_list_search_and_trace_page(logged_in, project, fixtures):
    assert b"No traces yet" in logged_in.get("/").content
    outcome = ingest.do_import_sources(project, [SourceFile("n.json", (fixtures / "native_small.json").read_bytes())])
    trace = outcome[0].traces[0]
    listing = logged_in.get("/").content.decode()
    assert "Hand-written orchestrator with two workers" in listing and f"/traces/{trace.pk}/" in listing
    assert "Hand-written" not in logged_in.get("/?q=no-such-thing").content.decode().split("<main")[1]
    assert "Hand-written" in logged_in.get("/?q=fixture").content.decode()
    page = logged_in.get(f"/traces/{trace.pk}/")
    assert page.status_code == 200 and f"/ws/traces/{trace.pk}/".encode() in page.content
    assert logged_in.get(f"/traces/{trace.pk + 100}/").status_code == 404


def test_compare_without_both_traces_answers_400_with_the_usage_line(logged_in, project, fixtures):
    outcome = ingest.do_import_sources(project, [SourceFile("n.json", (fixtures / "native_small.json").read_bytes())])
    trace = outcome[0].traces[0]
    response = logged_in.get(f"/traces/compare/?left={trace.pk}")
    text = response.content.decode()
    assert response.status_code == 400 and "Compare needs" in text and "(right missing)" in text
    assert "deleted" not in text and "compare_page.js" not in text
    assert logged_in.get(f"/traces/compare/?left={trace.pk}&right={trace.pk + 100}").status_code == 404


def test_upload_page_reports_each_file(logged_in, fixtures):
    with open(fixtures / "native_small.json", "rb") as good, open(fixtures / "README.txt", "rb") as readme:
        response = logged_in.post("/upload/", {"file": [good, readme]})
    text = response.content.decode()
    assert "imported as trace" in text and "skipped: not a trace" in text


def test_one_agent_one_event_and_one_trace_are_counted_in_the_singular(logged_in):
    from django.core.files.uploadedfile import SimpleUploadedFile

    doc = {
        "format": "swarmscope",
        "version": 1,
        "source_format": "native",
        "source_id": "one-of-each",
        "agents": [{"name": "solo"}],
        "events": [{"id": "e1", "t": 0.0, "type": "message", "agent": "solo"}],
    }
    upload = SimpleUploadedFile("one.json", json.dumps(doc).encode(), content_type="application/json")
    report = logged_in.post("/upload/", {"file": upload}).content.decode()
    assert re.search(r"one\.json: imported as trace \d+: 1 agent, 1 event\b", report), report[-2000:]
    listing = logged_in.get("/").content.decode()
    count = '<span data-testid="trace-count" data-number="1">1</span> <span data-trace-count-noun>trace</span>'
    assert count in listing


def test_upload_goes_to_the_project_chosen_on_the_page(logged_in, member, project, fixtures):
    from webapp.accounts.services import do_add_member, do_get_or_create_project
    from webapp.traces.models import Trace

    first_by_name = do_get_or_create_project("Aaa scratch")
    do_add_member(first_by_name, member, "admin")
    readonly = do_get_or_create_project("Read only here")
    do_add_member(readonly, member, "viewer")
    form = logged_in.get(f"/upload/?project={project.pk}").content.decode()
    assert 'name="project"' in form and "Read only here" not in form  # only projects one may write in
    assert f'<option value="{project.pk}" selected>Test project</option>' in form
    with open(fixtures / "native_small.json", "rb") as good:
        answer = logged_in.post("/upload/", {"file": good, "project": project.pk}).content.decode()
    assert Trace.objects.get().project == project and "Into project <strong" in answer and "Test project" in answer
    with open(fixtures / "native_small.json", "rb") as good:
        assert logged_in.post("/upload/", {"file": good, "project": readonly.pk}).status_code == 403
    with open(fixtures / "native_small.json", "rb") as good:
        assert logged_in.post("/upload/", {"file": good, "project": 10**6}).status_code == 404
    assert Trace.objects.count() == 1


def test_token_page_shows_a_new_token_once(logged_in, project):
    created = logged_in.post("/tokens/", {"name": "cluster", "project": project.pk}, follow=True).content.decode()
    assert "ssk_" in created
    assert "copy it now" not in logged_in.get("/tokens/").content.decode()
