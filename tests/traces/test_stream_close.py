"""`POST /api/traces/<id>/close/` (webapp.traces.live): the sender says its stream has ended and the
trace stops being live at once, on the API, the trace socket and the trace-list socket; who may
close, what a bad id gets, and that a second close changes nothing."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from swarmscope import model as core
from swarmscope import protocol
from tests.live_socket import HEADERS, CheckedCommunicator
from webapp.config.asgi import application
from webapp.traces import ingest, live, services
from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def post(client, url, body=None):
    return client.post(url, data=json.dumps(body or {}), content_type="application/json")


def stream_into(client, name="stream") -> int:
    """A trace created and given one live batch through the API, as a running swarm does."""
    created = post(client, "/api/traces/", {"name": name, "system": "tests"})
    assert created.status_code == 201, created.content
    trace_id = created.json()["trace"]["id"]
    batch = post(client, f"/api/traces/{trace_id}/events/", [{"id": "e1", "t": 0.0, "type": "message", "agent": "a"}])
    assert batch.status_code == 200 and batch.json()["trace"]["live"] is True
    return trace_id


def test_closing_ends_the_live_state_at_once_and_a_second_close_changes_nothing(api_client):
    trace_id = stream_into(api_client)
    before = Trace.objects.get(pk=trace_id)
    assert services.is_live(before)

    first = post(api_client, f"/api/traces/{trace_id}/close/")
    assert first.status_code == 200, first.content
    body = first.json()
    assert body["closed"] is True and body["seq"] == before.seq + 1
    assert body["trace"]["live"] is False and body["trace"]["event_count"] == 1
    assert api_client.get(f"/api/traces/{trace_id}/").json()["live"] is False
    row = services.list_row(Trace.objects.get(pk=trace_id))
    assert row["live"] is False and row["live_for_s"] == 0
    assert trace_id not in {r["id"] for r in services.list_snapshot(before.project_id)["traces"]}

    again = post(api_client, f"/api/traces/{trace_id}/close/")
    assert again.status_code == 200
    assert again.json()["closed"] is False and again.json()["seq"] == body["seq"]  # no new write
    assert Trace.objects.get(pk=trace_id).seq == body["seq"]


def test_a_batch_after_the_close_makes_the_trace_live_again(api_client):
    trace_id = stream_into(api_client)
    post(api_client, f"/api/traces/{trace_id}/close/")
    later = post(
        api_client, f"/api/traces/{trace_id}/events/", [{"id": "e2", "t": 1.0, "type": "message", "agent": "a"}]
    )
    assert later.json()["trace"]["live"] is True
    assert post(api_client, f"/api/traces/{trace_id}/close/").json()["closed"] is True


def test_the_close_keeps_the_cached_metrics_valid(api_client):
    trace_id = stream_into(api_client)
    trace = Trace.objects.get(pk=trace_id)
    metrics = services.get_computed_metrics(trace)
    assert metrics and trace.computed_metrics_seq == trace.seq
    live.do_close_stream(trace_id)
    closed = Trace.objects.get(pk=trace_id)
    assert closed.computed_metrics_seq == closed.seq == trace.seq + 1 and closed.computed_metrics == metrics


def test_who_may_close_and_what_a_bad_id_gets(team, client):
    reviewer = team.client("rev")
    trace_id = stream_into(reviewer)
    url = f"/api/traces/{trace_id}/close/"

    viewer = post(team.client("vic"), url)
    assert viewer.status_code == 403 and "closing a trace's stream" in viewer.json()["error"]
    assert post(team.client("zed"), url).status_code == 404  # another project's trace: as unknown
    assert client.post(url).status_code == 401  # no token, no session
    assert post(reviewer, "/api/traces/999999999/close/").json() == {"error": "no such trace"}
    assert post(reviewer, "/api/traces/999999999/close/").status_code == 404
    assert post(reviewer, f"/api/traces/{2**63}/close/").status_code == 404
    not_a_number = post(reviewer, "/api/traces/abc/close/")
    assert not_a_number.status_code == 404 and not_a_number["Content-Type"].startswith("application/json")
    assert reviewer.get(url).status_code == 405
    assert services.is_live(Trace.objects.get(pk=trace_id)), "no refused call ended the stream"

    assert post(reviewer, url).json()["closed"] is True
    assert post(team.client("ann"), url).json()["closed"] is False  # an admin's second close


def test_a_trace_taking_a_large_batch_answers_503_and_stays_as_it_was(api_client, settings):
    trace_id = stream_into(api_client)
    Trace.objects.filter(pk=trace_id).update(staged_at=timezone.now())
    busy = post(api_client, f"/api/traces/{trace_id}/close/")
    assert busy.status_code == 503 and busy.json()["code"] == "trace_busy" and int(busy["Retry-After"]) >= 1
    row = Trace.objects.get(pk=trace_id)
    assert row.last_event_at is not None and row.seq == 2

    # a staging whose writer died (older than the timeout) is discarded, then the close goes through
    stale = timezone.now() - timezone.timedelta(seconds=settings.SWARMSCOPE_INGEST_STAGE_TIMEOUT_S + 5)
    Trace.objects.filter(pk=trace_id).update(staged_at=stale)
    closed = post(api_client, f"/api/traces/{trace_id}/close/")
    assert closed.status_code == 200 and closed.json()["closed"] is True
    assert Trace.objects.get(pk=trace_id).staged_at is None


# --- on the sockets ------------------------------------------------------------------------------


@database_sync_to_async
def _streamed(project):
    trace = ingest.do_ingest(project, core.Trace(source_format="native", source_id="closing"), live=True).trace
    fragment = core.Trace(source_format="native", source_id="closing")
    fragment.events = [core.event_from_dict({"id": "e1", "t": 0.0, "type": "message", "agent": "a"})]
    ingest.do_ingest(project, fragment, trace=trace, live=True)
    return Trace.objects.get(pk=trace.pk)


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
async def test_viewers_get_the_close_as_the_next_delta_and_the_list_row_as_not_live(project, api_token):
    trace = await _streamed(project)
    viewer = CheckedCommunicator("trace", f"/ws/traces/{trace.pk}/?token={api_token}")
    assert (await viewer.connect())[0]
    snapshot = await viewer.receive_json_from(timeout=10)
    assert snapshot["trace"]["live"] is True
    listing = WebsocketCommunicator(application, f"/ws/projects/{project.pk}/traces/?token={api_token}", HEADERS)
    assert (await listing.connect())[0]
    listed = await listing.receive_json_from(timeout=10)
    assert [r["id"] for r in listed["traces"] if r["live"]] == [trace.pk]

    result = await database_sync_to_async(live.do_close_stream)(trace.pk)
    assert result is not None and result.closed

    delta = await viewer.receive_json_from(timeout=10)
    assert delta["type"] == "delta" and delta["seq"] == snapshot["seq"] + 1
    assert delta["trace"]["live"] is False
    assert not any(delta[name] for name in ("agents", "events", "edges", "labels"))
    fresh = await database_sync_to_async(services.get_snapshot)(trace, with_metrics=False)
    applied = protocol.apply_delta(snapshot, delta)
    assert applied["seq"] == fresh["seq"] and fresh["trace"]["live"] is False
    assert protocol.canonical({**applied, "trace": None}) == protocol.canonical({**fresh, "trace": None})

    row = await listing.receive_json_from(timeout=10)
    assert [(r["id"], r["live"], r["seq"]) for r in row["traces"]] == [(trace.pk, False, delta["seq"])]
    await viewer.disconnect()
    await listing.disconnect()


def test_a_viewer_resuming_across_the_close_learns_the_stream_ended(api_client):
    """A reconnect with `?seq=` (or a lagging socket's catch-up) gets one delta from
    `get_delta_since`: it carries the trace summary, so a viewer that missed the close delta sees
    the trace closed instead of waiting for the idle timeout."""
    trace_id = stream_into(api_client)
    seq_before = Trace.objects.get(pk=trace_id).seq
    live_resume = services.get_delta_since(Trace.objects.get(pk=trace_id), seq_before - 1)
    assert live_resume["trace"]["live"] is True
    assert post(api_client, f"/api/traces/{trace_id}/close/").status_code == 200
    resumed = services.get_delta_since(Trace.objects.get(pk=trace_id), seq_before)
    assert resumed["type"] == "delta" and resumed["seq"] == seq_before + 1
    assert resumed["trace"]["live"] is False and resumed["trace"]["event_count"] == 1
