"""Caps on live sockets (webapp.web.sockets): open sockets per user and per project refused with
4429 naming the cap, and a socket's resume requests rate-limited (issue 33). Through Channels'
WebsocketCommunicator on the app, with the configured channel layer."""

import json

import pytest

from swarmscope import model as core
from tests.live_socket import CheckedCommunicator
from webapp.traces import ingest
from webapp.web import sockets

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(60)]


@pytest.fixture
def trace(project, fixtures):
    return ingest.do_ingest(
        project, core.trace_from_dict(json.loads((fixtures / "native_small.json").read_text()))
    ).trace


def connect(trace_id, token):
    return CheckedCommunicator("trace", f"/ws/traces/{trace_id}/?token={token}")


async def opened(trace_id, token):
    ws = connect(trace_id, token)
    connected, _ = await ws.connect()
    assert connected
    return ws, await ws.receive_json_from(timeout=10)


async def test_sockets_over_the_cap_per_user_are_refused_with_4429_and_a_closed_one_frees_its_place(
    trace, api_token, settings
):
    settings.SWARMSCOPE_SOCKETS_PER_USER = 2
    first, snapshot = await opened(trace.pk, api_token)
    second, _ = await opened(trace.pk, api_token)
    assert snapshot["type"] == "snapshot"
    third, refusal = await opened(trace.pk, api_token)
    assert refusal == {
        "type": "error",
        "message": "too many open sockets: 2 for one user (SWARMSCOPE_SOCKETS_PER_USER); close other tabs or clients",
    }
    assert (await third.receive_output(timeout=5)) == {
        "type": "websocket.close",
        "code": 4429,
        "reason": refusal["message"],
    }
    await first.disconnect()
    fourth, again = await opened(trace.pk, api_token)
    assert again["type"] == "snapshot"
    for ws in (second, third, fourth):
        await ws.disconnect()
    assert sockets.SOCKET_COUNTS.by_user == {}  # every place given back


async def test_sockets_over_the_cap_per_project_are_refused(trace, api_token, settings):
    settings.SWARMSCOPE_SOCKETS_PER_PROJECT = 1
    first, _ = await opened(trace.pk, api_token)
    second, refusal = await opened(trace.pk, api_token)
    assert "1 on one project (SWARMSCOPE_SOCKETS_PER_PROJECT)" in refusal["message"]
    await first.disconnect()
    await second.disconnect()


async def test_resume_requests_over_the_rate_are_answered_with_the_limit(trace, api_token, settings):
    settings.SWARMSCOPE_SOCKET_RESUMES_PER_MINUTE = 1  # a burst of RESUME_BURST, then one a minute
    ws, snapshot = await opened(trace.pk, api_token)
    for _ in range(sockets.SequencedConsumer.RESUME_BURST):
        await ws.send_json_to({"type": "resume", "seq": 0})
        assert (await ws.receive_json_from(timeout=10))["type"] in ("snapshot", "delta")
    await ws.send_json_to({"type": "resume", "seq": 0})
    refused = await ws.receive_json_from(timeout=10)
    assert refused["type"] == "error" and "over 1 resume requests a minute on one socket" in refused["message"]
    assert "SWARMSCOPE_SOCKET_RESUMES_PER_MINUTE" in refused["message"] and "retry in" in refused["message"]
    assert await ws.receive_nothing(timeout=0.2)  # the socket stays open, nothing else sent
    await ws.disconnect()
