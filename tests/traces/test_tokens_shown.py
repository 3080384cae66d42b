"""Tokens shown on the trace list (its HTML and its live rows), the trace page, the API and in the
metrics agree with each other and with the measured usage; estimates are apart and marked
(docs/metrics.md "Tokens"). On hand-written fixtures, and on every file of ../shared/data against
its usage summed by hand (tests/token_usage.py)."""

import html
import importlib
import json
import math
import re

import pytest
from django.apps import apps

import swarmscope
from swarmscope.importers import SourceFile
from swarmscope.tokens import trace_usage
from tests.token_usage import shared_groups
from webapp.traces import ingest, services
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]

ROW = re.compile(r'<tr data-trace-id="(\d+)".*?</tr>', re.S)
CELL = re.compile(
    r'<td class="([^"]*)" data-col="total_tokens" data-measured="(\d*)" data-estimated="(\d+)" title="([^"]*)">'
    r'<span data-tokens="figure">([^<]*)</span>'
)
HEADER = re.compile(
    r'data-testid="trace-tokens" data-measured="(\d*)" data-estimated="(\d+)"[^>]*>\s*· '
    r'<span data-tokens="figure" class="([^"]*)" title="([^"]*)">([^<]*)</span>'
)


@pytest.fixture
def logged_in(client, member):
    client.force_login(member)
    return client


def _number(text: str) -> int | None:
    return int(text) if text else None


def list_cells(client) -> dict[int, tuple[int | None, int, str, str, str]]:
    """Trace id -> the list's tokens cell (measured, estimated, classes, title, text), every page."""
    cells, page = {}, 1
    while True:
        body = client.get(f"/?page={page}").content.decode()
        rows = ROW.findall(body)
        for match in re.finditer(ROW, body):
            cell = CELL.search(match.group(0))
            assert cell, match.group(0)
            classes, measured, estimated, title, text = cell.groups()
            cells[int(match.group(1))] = (_number(measured), int(estimated), classes, html.unescape(title), text)
        if not rows or f"page={page + 1}" not in body:
            return cells
        page += 1


def shown(client, trace: Trace, cell) -> list[tuple[str, int | None, int]]:
    """(where, measured, estimated) of every place `trace`'s tokens are shown."""
    api = client.get(f"/api/traces/{trace.pk}/").json()
    snapshot = client.get(f"/api/traces/{trace.pk}/snapshot/").json()["trace"]
    metrics = snapshot["computed_metrics"]
    page = client.get(f"/traces/{trace.pk}/").content.decode()
    header = HEADER.search(page)
    assert header, f"no token figure on the page of {trace.name}"
    live = services.list_row(trace)
    return [
        ("list", cell[0], cell[1]),
        ("live list row", live["total_tokens"], live["estimated_tokens"]),
        ("trace page", _number(header.group(1)), int(header.group(2))),
        ("API", api["total_tokens"], api["estimated_tokens"]),
        ("snapshot", snapshot["total_tokens"], snapshot["estimated_tokens"]),
        ("metrics", metrics["tokens"], metrics["estimated_tokens"]),
    ]


def check_marked(page: str, cell, measured: int | None, estimated: int) -> None:
    """The list cell and the page's figure read the measurement, else the estimate marked as one."""
    _, _, classes, title, text = cell
    header = HEADER.search(page)
    figure_classes, figure_title, figure = header.group(3), html.unescape(header.group(4)), header.group(5)
    if measured is not None:
        assert text == str(measured) and "estimate" not in classes.split()
        assert figure == f"{measured} tokens" and "estimate" not in figure_classes.split()
        assert title.startswith("measured") and figure_title.startswith("measured")
        assert (f"~{estimated} more estimated" in title) == bool(estimated)
        assert ("est. apart" in page) == bool(estimated)
    elif estimated:
        assert text == f"~{estimated} est." and "estimate" in classes.split() and title.startswith("estimate:")
        assert figure == f"~{estimated} est. tokens" and "estimate" in figure_classes.split()
    else:
        assert text == "–"


def import_files(project, paths) -> list[Trace]:
    outcomes = ingest.do_import_sources(project, [SourceFile(str(p), p.read_bytes()) for p in paths])
    assert not [o.error for o in outcomes if o.error], [o.error for o in outcomes]
    pks = dict.fromkeys(t.pk for o in outcomes for t in o.traces)  # a trace joined from several files once
    return [Trace.objects.get(pk=pk) for pk in pks]


def test_fixtures_show_measured_totals_and_marked_estimates(logged_in, project, fixtures):
    reasoning = import_files(project, [fixtures / "langfuse_reasoning_tokens.json"])[0]
    survey = import_files(project, [fixtures / "survey_small.json"])[0]
    chat = import_files(project, [fixtures / "whowhen_hand_crafted.json"])[0]
    history = json.loads((fixtures / "whowhen_hand_crafted.json").read_text())["history"]
    # By hand. Langfuse's totals of the two calls, 214 and 80 + 12 + 40 (reasoning included); the
    # calculator's input 28 characters -> 7 and output "0.79" -> 1, estimated. The survey trace's
    # costs.tokens 40 (its one event's 5 is part of it), its three texts without tokens estimated:
    # "Plan: spawn a researcher." 25 -> 7, "Find the boiling point of water." 32 -> 8, "100 degrees C
    # at sea level." 27 -> 7. Who&When measures nothing: ceil(characters / 4) of each message.
    expected = {
        reasoning.pk: (214 + 132, 7 + 1),
        survey.pk: (40, 7 + 8 + 7),
        chat.pk: (None, sum(math.ceil(len(h["content"]) / 4) for h in history)),
    }
    cells = list_cells(logged_in)
    for trace in (reasoning, survey, chat):
        measured, estimated = expected[trace.pk]
        for where, *figure in shown(logged_in, trace, cells[trace.pk]):
            assert tuple(figure) == (measured, estimated), (trace.name, where)
        check_marked(logged_in.get(f"/traces/{trace.pk}/").content.decode(), cells[trace.pk], measured, estimated)


def test_a_streamed_trace_counts_measured_tokens_and_merges(api_client, project):
    """Through the API: estimates never reach the total, and tokens a re-sent event adds move the
    estimate into the measurement."""
    events = [
        {"id": "e1", "t": 0, "type": "message", "agent": "a", "tokens": 30},
        {"id": "e2", "t": 1, "type": "message", "agent": "a", "content": "x" * 40},  # ~10 estimated
        {"id": "e3", "t": 2, "type": "message", "agent": "a", "tokens": 9, "attributes": {"tokens_estimated": True}},
    ]
    created = api_client.post(
        "/api/traces/", data=json.dumps({"name": "s", "events": events}), content_type="application/json"
    )
    assert created.status_code == 201, created.content
    pk = created.json()["trace"]["id"]
    trace = api_client.get(f"/api/traces/{pk}/").json()
    assert (trace["total_tokens"], trace["estimated_tokens"]) == (30, 10 + 9)
    more = [{"id": "e2", "t": 1, "type": "message", "agent": "a", "tokens": 12}]
    response = api_client.post(
        f"/api/traces/{pk}/events/", data=json.dumps({"events": more}), content_type="application/json"
    )
    assert response.status_code == 200, response.content
    trace = api_client.get(f"/api/traces/{pk}/").json()
    assert (trace["total_tokens"], trace["estimated_tokens"]) == (30 + 12, 9)


def test_an_empty_trace_has_no_measured_tokens(api_client, project):
    created = api_client.post("/api/traces/", data=json.dumps({"name": "empty"}), content_type="application/json")
    summary = created.json()["trace"]
    assert (summary["total_tokens"], summary["estimated_tokens"]) == (None, 0)


def test_otlp_spans_store_what_the_library_computes(api_client, project, fixtures):
    body = (fixtures / "otlp_genai_small.json").read_bytes()
    assert api_client.post("/v1/traces", data=body, content_type="application/json").status_code == 200
    (trace,) = swarmscope.read_traces(fixtures / "otlp_genai_small.json")
    usage = trace_usage(trace)
    row = Trace.objects.get(project=project)
    assert usage.measured is not None
    assert (row.total_tokens, row.estimated_tokens) == (usage.measured, usage.estimated)


def test_the_migration_recounts_stored_totals(project, fixtures):
    """Rows stored with the old total (estimates added) are recounted from their events."""
    migration = importlib.import_module("webapp.traces.migrations.0010_measured_and_estimated_tokens")
    traces = import_files(
        project, [fixtures / "langfuse_reasoning_tokens.json", fixtures / "whowhen_hand_crafted.json"]
    )
    right = {t.pk: (t.total_tokens, t.estimated_tokens) for t in traces}
    Trace.objects.update(total_tokens=999, estimated_tokens=0)
    migration.recount(apps, None)
    assert {t.pk: (t.total_tokens, t.estimated_tokens) for t in Trace.objects.all()} == right


def test_every_shared_file_shows_its_measured_usage_everywhere(logged_in, project, shared_data):
    """List, live list row, trace page, API, snapshot and metrics give the same two figures for
    every trace of ../shared/data: the usage summed by hand from the raw file (None where the
    source measured none), and the estimate apart, the library's of the stored trace."""
    imported = []
    for label, files, expected in shared_groups(shared_data):
        traces = import_files(project, files)
        assert traces, label
        library = {t.identity_key: trace_usage(t) for t in swarmscope.read_traces(*files)}
        imported += [(label, expected, library[t.identity_key], t) for t in traces]
    cells = list_cells(logged_in)
    assert len(cells) == len(imported) == 10 + 1 + 4 + 1 + 5 + 2 + 45 + 19
    for label, expected, library, trace in imported:
        assert library.measured == expected, label
        # the estimate of what is stored: redaction at ingestion may shorten the content
        estimate = trace_usage(services.to_core_trace(trace)).estimated
        assert estimate <= library.estimated, label
        for where, measured, estimated in shown(logged_in, trace, cells[trace.pk]):
            assert (measured, estimated) == (expected, estimate), (label, where)
        check_marked(logged_in.get(f"/traces/{trace.pk}/").content.decode(), cells[trace.pk], expected, estimate)
