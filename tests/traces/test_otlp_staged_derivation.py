"""A derivation adding more than SWARMSCOPE_OTLP_DERIVE_CHUNK_ROWS events stages them in chunks,
unpublished, and publishes the rest in one short transaction (`span_ingest._stage_added_events`):
readers see the trace as it was until then, OTLP requests of the stream go on between the chunks,
and a derivation that fails or dies between them leaves nothing visible behind."""

import json
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from swarmscope.importers import otlp
from tests.traces.test_otlp_incremental import REPO
from tests.traces.test_otlp_streaming import import_once, stored_form
from webapp.traces import ingest, span_ingest
from webapp.traces.models import Trace

sys.path.insert(0, str(REPO / "bench"))
from otlp_cases import CASES, requests  # noqa: E402

SOURCE = "OTLP/HTTP"


@pytest.fixture
def spans():
    """The `supervisor` case of bench/otlp_cases.py (50 spans, 3 agents), as the server decodes it."""
    (request,) = requests(CASES["supervisor"](0), 10**6)
    (decoded,) = otlp.decode_protobuf(request.SerializeToString()).values()
    return decoded


@pytest.fixture
def deferred(settings, monkeypatch):
    """Every request leaves its trace to `do_derive_spans` (called by the test); chunks of 5 events."""
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 0
    settings.SWARMSCOPE_OTLP_DERIVE_CHUNK_ROWS = 5
    monkeypatch.setattr(span_ingest, "_enqueue_derive", lambda pk, source: None)


def post(client, spans) -> int:
    response = client.post("/v1/traces", data=json.dumps(otlp.encode_json(spans)), content_type="application/json")
    return response.status_code


def published(trace: Trace) -> int:
    """Events a reader sees: those whose seq is at most the trace's."""
    trace.refresh_from_db()
    return trace.events.filter(seq__lte=trace.seq).count()


def test_requests_go_on_between_the_chunks_of_a_derivation(api_client, spans, deferred, monkeypatch):
    first, rest = spans[:30], spans[30:]
    assert post(api_client, first) == 200
    trace = Trace.objects.get(source_id=spans[0].trace_id)
    seen = []

    def between_chunks(stage, trace_id, chunk):  # fault injection: another request arrives here
        if chunk == 1:
            row = Trace.objects.get(pk=trace_id)
            seen.append((row.seq, published(row), row.events.count(), row.staged_at is not None))
            seen.append(post(api_client, rest))

    monkeypatch.setattr(ingest, "fault_injection_point", between_chunks)
    result = span_ingest.do_derive_spans(trace.pk, otlp, SOURCE)
    assert result is not None and result.events_added > 10  # more than two chunks
    (seq, visible, stored, staged), status = seen
    assert (seq, visible, staged) == (0, 0, True) and stored == 10  # two chunks stored, none visible
    assert status == 200  # the request stored its spans instead of waiting for the derivation
    trace.refresh_from_db()
    assert trace.staged_at is None and trace.spans_pending and trace.spans.count() == len(spans)
    assert published(trace) == trace.events.count() == result.events_added
    monkeypatch.setattr(ingest, "fault_injection_point", lambda *args: None)
    assert span_ingest.do_derive_spans(trace.pk, otlp, SOURCE) is not None
    assert stored_form(Trace.objects.get(pk=trace.pk)) == import_once(spans)


def test_a_derivation_failing_between_chunks_leaves_nothing_staged(api_client, spans, deferred, monkeypatch):
    assert post(api_client, spans) == 200
    trace = Trace.objects.get(source_id=spans[0].trace_id)

    def fail(stage, trace_id, chunk):  # fault injection
        if chunk == 2:
            raise OSError("disk gone")

    monkeypatch.setattr(ingest, "fault_injection_point", fail)
    with pytest.raises(OSError):
        span_ingest.do_derive_spans(trace.pk, otlp, SOURCE)
    trace.refresh_from_db()
    assert trace.seq == 0 and trace.staged_at is None and not trace.events.exists()
    assert trace.spans_pending  # for the periodic sweep (derive_pending_spans) to derive it again
    monkeypatch.setattr(ingest, "fault_injection_point", lambda *args: None)
    assert span_ingest.do_derive_spans(trace.pk, otlp, SOURCE) is not None
    assert stored_form(Trace.objects.get(pk=trace.pk)) == import_once(spans)


def test_the_next_derivation_clears_what_a_dead_one_staged(api_client, spans, deferred, monkeypatch, settings):
    assert post(api_client, spans[:30]) == 200
    trace = Trace.objects.get(source_id=spans[0].trace_id)

    class Killed(BaseException):
        """The worker's process dies: nothing after this point runs."""

    def die(stage, trace_id, chunk):  # fault injection
        if chunk == 1:
            raise Killed

    monkeypatch.setattr(ingest, "fault_injection_point", die)
    monkeypatch.setattr(span_ingest, "discard_staged", lambda *args, **kwargs: None)  # a dead process cleans nothing
    with pytest.raises(Killed):
        span_ingest.do_derive_spans(trace.pk, otlp, SOURCE)
    monkeypatch.undo()
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 0
    monkeypatch.setattr(span_ingest, "_enqueue_derive", lambda pk, source: None)
    trace.refresh_from_db()
    assert trace.staged_at is not None and trace.events.count() == 10 and published(trace) == 0

    assert post(api_client, spans[30:]) == 200  # the stream goes on: its spans are stored
    assert span_ingest.do_derive_spans(trace.pk, otlp, SOURCE) is None  # the staging may still be alive
    assert Trace.objects.get(pk=trace.pk).spans_pending
    before = timezone.now() - timedelta(seconds=settings.SWARMSCOPE_INGEST_STAGE_TIMEOUT_S + 1)
    Trace.objects.filter(pk=trace.pk).update(staged_at=before)  # silent past the timeout
    assert span_ingest.do_derive_spans(trace.pk, otlp, SOURCE) is not None
    trace.refresh_from_db()
    assert trace.staged_at is None and not trace.events.filter(seq__gt=trace.seq).exists()
    assert stored_form(trace) == import_once(spans)
