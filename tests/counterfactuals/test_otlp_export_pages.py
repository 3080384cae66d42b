"""The OTLP export read from the database a page at a time (issue 33: its memory a page's, not the
trace's) gives the text the whole-trace export gives: with pages of a few events, where tool calls
and the results folded into their spans fall in different pages, links cross pages, and an
attribution adds span events."""

from __future__ import annotations

import json

import pytest

from swarmscope.otlp_export import iter_otlp_json
from tests.synthetic import synthetic_trace
from webapp.counterfactuals import services
from webapp.traces import ingest
from webapp.traces.services import StoredSpanSource, to_core_trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def stored(project):
    trace = synthetic_trace(9, 700, seed=4)
    trace.source_format, trace.source_id = "native", "paged-export"
    return ingest.do_ingest(project, trace).trace


def whole(trace) -> str:
    """The export as it was: the whole trace read, then the document dumped."""
    return json.dumps(services.otlp_export(trace), ensure_ascii=False)


@pytest.mark.parametrize("page_events", [1, 7, 64, 10_000])
def test_a_paged_export_is_the_whole_trace_export(stored, page_events):
    source = StoredSpanSource(stored, page_events)
    pages = [[e.id for _, e in page] for page in source.pages()]
    assert sum(map(len, pages)) == stored.event_count and len(pages) == -(-stored.event_count // page_events)
    if 1 < page_events < stored.event_count:  # the case the pages must get right: a fold across pages
        page_of = {event_id: n for n, ids in enumerate(pages) for event_id in ids}
        assert any(page_of[result] != page_of[call] for result, call in source.plan.folded.items())
    assert source.plan.folded  # the synthetic trace has tool results folded into their calls
    streamed = "".join(services.otlp_export_chunks(stored, page_events))
    assert streamed == whole(stored)
    # and the library's in-memory stream of the same trace
    assert streamed == "".join(iter_otlp_json(to_core_trace(stored), origin_ns=_origin(streamed)))


def _origin(text: str) -> int:
    """The root span's start (the export's origin, ns)."""
    return int(json.loads(text)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["startTimeUnixNano"])


def test_the_api_export_reads_pages_of_the_setting(api_client, stored, settings):
    settings.SWARMSCOPE_EXPORT_PAGE_EVENTS = 50
    response = api_client.get(f"/api/traces/{stored.pk}/export/otlp/")
    assert response.status_code == 200 and response.streaming
    streamed = b"".join(response.streaming_content).decode()
    stored.refresh_from_db()  # as the request read it (a read may store computed metrics)
    assert streamed == whole(stored)
