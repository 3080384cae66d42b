"""derive_spans coalesces a stream's bursts (webapp.traces.tasks): one derivation per trace at a
time, the next one scheduled after the last one's CPU time while requests keep the trace pending,
and started early once spans stop coming. Run in this process with a worker's settings (not eager);
what it hands the broker is recorded instead of sent."""

import time

import pytest
from django.core.cache import cache

from swarmscope.importers import otlp
from tests.traces.test_otlp_streaming import _file_traces, import_once, stored_form
from webapp.traces import span_ingest, tasks
from webapp.traces.models import Trace


@pytest.fixture
def stream(project, fixtures, settings, monkeypatch):
    """(spans, post(batch), trace row, sent): a worker's task settings; requests' and runs' tasks
    recorded in `sent` as (args, countdown)."""
    settings.SWARMSCOPE_OTLP_SYNC_SPANS = 2
    sent: list[tuple[tuple, float | None]] = []
    record = lambda name, *args, countdown=None, **options: sent.append((args, countdown)) or True  # noqa: E731
    monkeypatch.setattr(span_ingest, "enqueue", record)
    monkeypatch.setattr(tasks, "enqueue", record)
    (spans,) = _file_traces([fixtures / "otlp_genai_small.json"])

    def post(batch):
        span_ingest.do_ingest_spans(project, otlp, spans[0].trace_id, batch, "OTLP/HTTP")
        span_ingest._enqueue_derive(trace().pk, "OTLP/HTTP")  # what the request does after its commit

    def trace():
        return Trace.objects.get(project=project, identity_key=f"otlp:{spans[0].trace_id}")

    post(spans[:2])  # built within the request
    post(spans[2:3])  # left to the worker
    cache.delete(f"swarmscope:derive-spans:{trace().pk}")
    yield spans, post, trace, sent
    cache.delete(f"swarmscope:derive-spans:{trace().pk}")


def test_a_run_that_finds_another_on_the_trace_leaves_it_to_that_one(stream):
    spans, post, trace, sent = stream
    cache.add(f"swarmscope:derive-spans:{trace().pk}", 1)
    assert tasks.derive_spans(trace().pk) is None
    assert trace().spans_pending and trace().attributes["spans"] == 2


def test_spans_stored_during_a_derivation_are_derived_by_one_scheduled_run(stream, monkeypatch):
    spans, post, trace, sent = stream
    derive = tasks.do_derive_spans

    def derive_while_a_request_comes(*args):
        result = derive(*args)
        if len(spans) > trace().spans.count():
            post(spans[3:])  # a request's spans while the worker derives
        return result

    monkeypatch.setattr(tasks, "do_derive_spans", derive_while_a_request_comes)
    sent.clear()
    assert tasks.derive_spans(trace().pk) is not None
    assert trace().spans_pending and trace().attributes["spans"] == 3
    (request_ask, scheduled) = sent  # the request's ask, then the run's next derivation
    (pk, source, due), countdown = scheduled
    assert pk == trace().pk and due >= time.time() - 1 and (countdown is None or countdown <= tasks.DERIVE_POLL_S)
    assert tasks.derive_spans(*request_ask[0]) is None  # the marker is held: the request's run returns
    cache.delete(span_ingest.spans_stored_key(pk))  # the stream has paused: start before `due`
    assert tasks.derive_spans(pk, source, due + 60) is not None
    assert not trace().spans_pending and stored_form(trace()) == import_once(spans)
    assert cache.add(f"swarmscope:derive-spans:{pk}", 1)  # let go


def test_a_scheduled_run_waits_while_spans_keep_coming(stream):
    spans, post, trace, sent = stream
    pk = trace().pk
    cache.add(f"swarmscope:derive-spans:{pk}", 1)  # held by the run that scheduled this one
    sent.clear()
    post(spans[3:])
    sent.clear()
    assert tasks.derive_spans(pk, "OTLP/HTTP", time.time() + 30) is None  # spans came just now
    assert trace().spans_pending and trace().attributes["spans"] == 2
    ((args, countdown),) = sent
    assert args[0] == pk and countdown == tasks.DERIVE_POLL_S
