"""OTLP traces past SWARMSCOPE_OTLP_SYNC_SPANS are re-derived by the `derive_spans` task after the
request (here run eagerly, as on the embedded default without a worker), to the same trace."""

import json

from django.utils import timezone

from swarmscope.importers import otlp
from tests.traces.test_otlp_streaming import (
    _file_traces,
    import_once,
    stored_form,
    stream,
)
from webapp.traces.models import Trace
from webapp.traces.span_ingest import do_derive_spans
from webapp.traces.tasks import derive_pending_spans, derive_spans


def test_deferred_derivation_gives_the_same_trace(
    api_client, fixtures, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 2
    # the task itself, in this process, whatever the broker (test_celery_worker.py: on a real worker)
    monkeypatch.setattr(derive_spans, "apply_async", lambda args, **options: derive_spans.apply(args=args))
    (spans,) = _file_traces([fixtures / "otlp_genai_small.json"])
    batches = [spans[i : i + 2] for i in range(0, len(spans), 2)]
    assert len(batches) >= 3
    with django_capture_on_commit_callbacks(execute=True):  # the tasks run after commit
        before = stream(api_client, batches, ["protobuf", "json"] * len(batches))
    expected = import_once(spans)
    assert before != expected  # not yet derived
    assert (
        stored_form(Trace.objects.get(identity_key=f"otlp:{spans[0].trace_id}", project__name="Test project"))
        == expected
    )
    assert not Trace.objects.filter(spans_pending=True).exists()


def test_a_lost_task_is_asked_again(api_client, fixtures, settings, monkeypatch, django_capture_on_commit_callbacks):
    """With the broker down the request still answers 200 (its spans are committed); the periodic
    sweep derives the trace later."""
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 2
    (spans,) = _file_traces([fixtures / "otlp_genai_small.json"])

    refused = []

    def broker_down(*args, **kwargs):
        refused.append(args)
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr("webapp.traces.tasks.derive_spans.apply_async", broker_down)  # fault injection
    for batch in (spans[:2], spans[2:]):
        with django_capture_on_commit_callbacks(execute=True) as enqueued:  # the request's enqueue runs, and fails
            response = api_client.post(
                "/v1/traces", data=json.dumps(otlp.encode_json(batch)), content_type="application/json"
            )
        assert response.status_code == 200, response.content
    assert enqueued and refused  # the second request asked for the rebuild, and the broker refused
    trace = Trace.objects.get(identity_key=f"otlp:{spans[0].trace_id}")
    assert trace.spans_pending and trace.spans.count() == len(spans)
    assert trace.attributes["spans"] == 2  # derived from the first request's spans only
    assert derive_pending_spans() == 1
    trace.refresh_from_db()
    assert not trace.spans_pending and trace.attributes["spans"] == len(spans)
    assert do_derive_spans(trace.pk, otlp, "OTLP/HTTP") is None  # nothing left to do


def test_spans_wait_while_a_large_api_batch_is_staged_into_their_trace(api_client, fixtures, settings):
    """A trace taking a large API batch in chunks (Trace.staged_at, webapp.traces.ingest) refuses
    OTLP spans with a 503 (exporters retry it) and stores none of them; a derivation asked for
    meanwhile is left pending for the periodic sweep."""
    (spans,) = _file_traces([fixtures / "otlp_genai_small.json"])
    post = lambda batch: api_client.post(  # noqa: E731
        "/v1/traces", data=json.dumps(otlp.encode_json(batch)), content_type="application/json"
    )
    assert post(spans[:2]).status_code == 200
    trace = Trace.objects.get(identity_key=f"otlp:{spans[0].trace_id}")
    Trace.objects.filter(pk=trace.pk).update(staged_at=timezone.now(), spans_pending=True)
    response = post(spans[2:])
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert response.json()["code"] == 14  # google.rpc.Code UNAVAILABLE: exporters retry
    assert trace.spans.count() == 2
    assert do_derive_spans(trace.pk, otlp, "OTLP/HTTP") is None
    assert Trace.objects.get(pk=trace.pk).spans_pending  # asked again by derive_pending_spans
    Trace.objects.filter(pk=trace.pk).update(staged_at=None)
    assert post(spans[2:]).status_code == 200 and trace.spans.count() == len(spans)
