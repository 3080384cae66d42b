"""Caps on live sockets (webapp.web.sockets): open sockets per user and per project refused with
4429 naming the cap, and a socket's resume requests rate-limited (issue 33). Through Channels'
WebsocketCommunicator on the app, with the configured channel layer."""

import asyncio
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
    trace, api_token, member, settings
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
    assert await sockets.socket_counts().count(member.pk, trace.project_id) == (0, 0)  # every place given back


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


async def test_sockets_are_counted_across_processes_in_redis_and_a_crashed_ones_expire(tmp_path, settings, monkeypatch):
    """Two Daphne processes' counts (two RedisSocketCounts on one Redis, the test's own): a cap is
    reached with the sockets of both; the sockets of a process that died without releasing them
    stop counting once their entries expire (SOCKET_COUNT_TTL_S, 3 s here); renewed ones do not."""
    from tests.servers import RedisServer

    server = RedisServer(tmp_path / "redis").start()
    try:
        settings.SWARMSCOPE_SOCKETS_PER_USER, settings.SWARMSCOPE_SOCKETS_PER_PROJECT = 2, 3
        monkeypatch.setattr(sockets, "SOCKET_COUNT_TTL_S", 3.0)
        one, two = (sockets.RedisSocketCounts(server.url, "swarmscope:sockets:test") for _ in range(2))
        assert await one.claim(7, 1, "one-a") is None
        assert await two.claim(7, 1, "two-a") is None
        refused = await two.claim(7, 1, "two-b")  # the user's third socket, the first in another process
        assert refused is not None and "2 for one user (SWARMSCOPE_SOCKETS_PER_USER)" in refused
        assert await two.claim(8, 1, "two-c") is None  # another user, the project's third
        refused = await one.claim(9, 1, "one-d")
        assert refused is not None and "3 on one project (SWARMSCOPE_SOCKETS_PER_PROJECT)" in refused
        assert await one.count(7, 1) == (2, 3)  # refused claims took nothing
        await one.release(7, 1, "one-a")
        assert await two.claim(7, 1, "two-b") is None  # a released place is free at once
        # process two dies but for socket two-a, which renews its entry (as an open socket does)
        await two.renew(7, 1, "two-a")
        await asyncio.sleep(1.5)
        await two.renew(7, 1, "two-a")
        await asyncio.sleep(2.0)
        assert await one.count(7, 1) == (1, 1)  # two-b and two-c expired, two-a renewed
        await asyncio.sleep(1.5)
        assert await one.count(7, 1) == (0, 0)  # nothing leaks past the TTL
        assert await one.claim(7, 1, "one-e") is None
    finally:
        server.stop()
