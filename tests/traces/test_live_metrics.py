"""Metrics of a streaming trace, recomputed by the worker and pushed on `/ws/traces/<id>/` as
`{"type": "metrics"}` (webapp.traces.services.request_live_metrics / do_publish_metrics): equal to
what a fresh page load computes, sent again after a resume, and asked for at most once while one
is pending. On a real Who&When log streamed in batches (every message checked against its schema)."""

from __future__ import annotations

import pytest
from celery import current_app
from channels.db import database_sync_to_async
from django.core.cache import cache

import swarmscope
from swarmscope import model as core
from swarmscope.metrics import compute_metrics
from tests.live_socket import CheckedCommunicator
from tests.stream_batches import stream_batches
from webapp.traces import ingest, services
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(120)]

WHOWHEN = ("who-and-when", "Hand-Crafted", "11.json")  # 130 events, 4 agents: the largest Hand-Crafted log


@pytest.fixture
def batches(shared_data):
    (recorded,) = swarmscope.read_traces(shared_data.joinpath(*WHOWHEN))
    return stream_batches(recorded, 5)


def fragment_of(trace: Trace, batch: dict) -> core.Trace:
    fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id)
    fragment.events = [core.event_from_dict(e, i) for i, e in enumerate(batch["events"])]
    fragment.edges = [core.edge_from_dict(e, i) for i, e in enumerate(batch["edges"])]
    fragment.agents = [core.agent_from_dict(a, i) for i, a in enumerate(batch["agents"])]
    fragment.labels = [core.label_from_dict(lb, i) for i, lb in enumerate(batch["labels"])]
    return fragment


@database_sync_to_async
def stream(trace: Trace, batch: dict) -> int:
    return ingest.do_ingest(trace.project, fragment_of(trace, batch), trace=trace, live=True).seq


@database_sync_to_async
def reload_metrics(trace_id: int) -> dict:
    """What a fresh page load shows: the snapshot's metrics, and the same computed from scratch."""
    trace = Trace.objects.get(pk=trace_id)
    shown = services.get_snapshot(trace)["trace"]["computed_metrics"]
    assert shown == compute_metrics(services.to_core_trace(trace))
    return shown


@pytest.fixture
def streamed(project, batches):
    """A streamed trace holding the first batch of the log."""
    trace = ingest.do_ingest(project, core.Trace(source_format="native", source_id="live-metrics"), live=True).trace
    ingest.do_ingest(project, fragment_of(trace, batches[0]), trace=trace, live=True)
    return Trace.objects.get(pk=trace.pk)


def connect(trace_id: int, token: str, query: str = "") -> CheckedCommunicator:
    return CheckedCommunicator("trace", f"/ws/traces/{trace_id}/?token={token}{query}")


async def test_published_metrics_equal_a_reload_after_the_stream(streamed, batches, api_token):
    ws = connect(streamed.pk, api_token)
    assert (await ws.connect())[0]
    snapshot = await ws.receive_json_from(timeout=10)
    first_paint = snapshot["trace"]["computed_metrics"]
    for batch in batches[1:]:
        seq = await stream(streamed, batch)
        assert (await ws.receive_json_from(timeout=10))["type"] == "delta"
    published = await database_sync_to_async(services.do_publish_metrics)(streamed.pk)
    message = await ws.receive_json_from(timeout=10)
    assert message == published
    assert message["type"] == "metrics" and message["seq"] == seq
    assert message["computed_metrics"] == await reload_metrics(streamed.pk)
    # the stream changed what the panel shows: the first paint counted the first batch only
    assert message["computed_metrics"]["total_events"] == sum(len(b["events"]) for b in batches)
    assert first_paint["total_events"] == len(batches[0]["events"]) < message["computed_metrics"]["total_events"]
    await ws.disconnect()


async def test_a_resume_sends_metrics_published_while_away(streamed, batches, api_token):
    ws = connect(streamed.pk, api_token)
    await ws.connect()
    snapshot = await ws.receive_json_from(timeout=10)
    await ws.disconnect()
    for batch in batches[1:3]:
        await stream(streamed, batch)
    await database_sync_to_async(services.do_publish_metrics)(streamed.pk)
    again = connect(streamed.pk, api_token, f"&seq={snapshot['seq']}")
    await again.connect()
    delta = await again.receive_json_from(timeout=10)
    assert delta["type"] == "delta" and delta["seq"] == snapshot["seq"] + 2
    metrics = await again.receive_json_from(timeout=10)
    assert metrics["type"] == "metrics" and metrics["seq"] == delta["seq"]
    assert metrics["computed_metrics"] == await reload_metrics(streamed.pk)
    # a resume at the same seq finds nothing newer to send
    await again.send_json_to({"type": "resume", "seq": delta["seq"]})
    assert await again.receive_nothing(timeout=0.5)
    await again.disconnect()


@pytest.fixture
def broker(settings):
    """Tasks sent to the in-memory broker rather than run inside the request (as with a worker)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    eager = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = False
    yield
    current_app.conf.task_always_eager = eager


def test_a_recompute_is_asked_for_once_while_one_is_pending(streamed, batches, broker):
    # With REDIS_URL the flag lives in a cache shared with earlier runs and other pytest workers,
    # whose traces reuse this pk: start from no flag.
    cache.delete(services._live_metrics_flag(streamed.pk))
    assert services.request_live_metrics(streamed.pk)
    assert not services.request_live_metrics(streamed.pk)  # pending: the batches of a stream share it
    services.do_publish_metrics(streamed.pk)  # the worker starts: the next write asks again
    assert services.request_live_metrics(streamed.pk)
    services.do_publish_metrics(streamed.pk)
    ingest.do_ingest(streamed.project, fragment_of(streamed, batches[1]), trace=streamed, live=True)
    assert not services.request_live_metrics(streamed.pk)  # the live write above asked already


def test_without_a_broker_nothing_is_published(streamed):
    # tests run tasks eagerly: a recompute per batch inside the request is not what live metrics are
    assert not services.request_live_metrics(streamed.pk)


def test_metrics_of_an_older_seq_never_overwrite_newer_ones(streamed, batches):
    old = Trace.objects.get(pk=streamed.pk)
    ingest.do_ingest(streamed.project, fragment_of(streamed, batches[1]), trace=streamed, live=True)
    services.do_publish_metrics(streamed.pk)
    newer = Trace.objects.get(pk=streamed.pk)
    old.computed_metrics_seq = -1  # a process that read the trace before the write computes late
    services.get_computed_metrics(old)
    stored = Trace.objects.get(pk=streamed.pk)
    assert stored.computed_metrics_seq == newer.seq
    assert stored.computed_metrics["total_events"] == newer.event_count
