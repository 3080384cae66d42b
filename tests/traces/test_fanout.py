"""Live fan-out (issue 19 item 4) through the app's ASGI entry and its channel layer: a delta
encoded once and forwarded as is, a lagging viewer's deltas coalesced into one catch-up from the
database, snapshots and gap fills read once for the viewers asking at once (webapp.web.sockets
SharedReads), and rights still checked per socket. Every message received is checked against its
schema (tests/live_socket.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.layers import get_channel_layer
from django.utils import timezone

from swarmscope import model as core
from swarmscope import protocol
from tests.live_socket import CheckedCommunicator
from webapp.accounts.models import ApiToken, hash_token
from webapp.accounts.services import do_add_member, do_create_token, do_get_or_create_project, do_revoke_token
from webapp.traces import ingest, services
from webapp.traces.consumers import TraceConsumer
from webapp.web import broadcast

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(60)]


@pytest.fixture
def trace(project, fixtures):
    return ingest.do_ingest(
        project, core.trace_from_dict(json.loads((fixtures / "native_small.json").read_text()))
    ).trace


@pytest.fixture
def captured(monkeypatch):
    """The deltas ingestion broadcasts, kept here instead of sent: the test sends them itself."""
    deltas: list[dict] = []
    monkeypatch.setattr(ingest, "broadcast_trace_delta", lambda trace_id, delta: deltas.append(delta))
    return deltas


@pytest.fixture
def in_time(monkeypatch):
    """No delivery counts as late, however slow the machine: every delta is forwarded as sent."""
    monkeypatch.setattr(TraceConsumer, "COALESCE_AFTER_S", float("inf"))


def connect(trace_id, token):
    return CheckedCommunicator("trace", f"/ws/traces/{trace_id}/?token={token}")


@database_sync_to_async
def append(trace, events):
    fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id)
    fragment.events = [core.event_from_dict(e) for e in events]
    return ingest.do_ingest(trace.project, fragment, trace=trace, live=True).seq


async def group_send(trace_id: int, delta: dict, waited_s: float = 0.0) -> None:
    """Send `delta` to the trace's viewers as webapp.web.broadcast does, as if broadcast `waited_s` ago."""
    message = broadcast._delta_message("trace.delta", delta)
    message["at"] -= waited_s
    await get_channel_layer().group_send(broadcast.trace_group(trace_id), message)


def strip(state):
    return protocol.canonical({k: v for k, v in state.items() if k != "trace"})


BATCHES = [
    [{"id": "live-1", "t": 7.0, "type": "message", "agent": "adder", "to": "orchestrator"}],
    [
        {"id": "live-1", "t": 7.0, "t_end": 7.25, "type": "message", "agent": "adder", "to": "orchestrator"},
        {"id": "live-2", "t": 7.5, "type": "message", "agent": "orchestrator", "to": "adder"},
    ],
    [{"id": "live-3", "t": 8.0, "type": "stop", "agent": "orchestrator"}],
]


async def test_a_lagging_viewer_gets_one_delta_equal_to_the_ones_it_missed(trace, api_token, captured):
    ws = connect(trace.pk, api_token)
    assert (await ws.connect())[0]
    snapshot = await ws.receive_json_from(timeout=10)
    for batch in BATCHES:
        await append(trace, batch)
    assert [d["seq"] for d in captured] == [2, 3, 4]

    await group_send(trace.pk, captured[0], waited_s=10)  # the viewer is 10 s behind
    coalesced = await ws.receive_json_from(timeout=10)
    assert coalesced["type"] == "delta" and coalesced["seq"] == 4
    one_by_one = snapshot
    for delta in captured:
        one_by_one = protocol.apply_delta(one_by_one, delta)
    fresh = await database_sync_to_async(services.get_snapshot)(trace, with_metrics=False)
    assert strip(protocol.apply_delta(snapshot, coalesced)) == strip(one_by_one) == strip(fresh)
    assert {e["id"]: e.get("t_end") for e in coalesced["events"]} == {"live-1": 7.25, "live-2": None, "live-3": None}

    for delta in captured[1:]:  # what the catch-up covered is not sent again
        await group_send(trace.pk, delta)
    assert await ws.receive_nothing(timeout=0.5)
    await ws.disconnect()


async def test_a_viewer_in_time_gets_each_delta_as_encoded_once(trace, api_token, monkeypatch, in_time):
    sent: list[dict] = []

    def keep_and_send(trace_id, delta):
        sent.append(delta)
        broadcast.broadcast_trace_delta(trace_id, delta)

    monkeypatch.setattr(ingest, "broadcast_trace_delta", keep_and_send)
    viewers = [connect(trace.pk, api_token) for _ in range(2)]
    for ws in viewers:
        assert (await ws.connect())[0]
        await ws.receive_json_from(timeout=10)
    for batch in BATCHES:
        await append(trace, batch)
    for ws in viewers:
        frames = [await ws.receive_from(timeout=10) for _ in BATCHES]
        # The frame is byte for byte what the consumer's own per-viewer encoding would send.
        assert frames == [await AsyncJsonWebsocketConsumer.encode_json(delta) for delta in sent]
        assert [json.loads(f)["seq"] for f in frames] == [2, 3, 4]
        await ws.disconnect()


async def test_viewers_joining_at_once_read_the_snapshot_once(trace, api_token, monkeypatch, in_time):
    reads: list[int] = []
    original = TraceConsumer.get_snapshot

    def counted(self, target):
        reads.append(target.pk)
        return original(self, target)

    monkeypatch.setattr(TraceConsumer, "get_snapshot", counted)
    viewers = [connect(trace.pk, api_token) for _ in range(5)]
    assert all(c for c, _ in await asyncio.gather(*(ws.connect() for ws in viewers)))
    texts = [await ws.receive_from(timeout=10) for ws in viewers]
    assert len(reads) == 1 and len(set(texts)) == 1 and json.loads(texts[0])["seq"] == 1

    # A viewer joining after a write gets that write in its snapshot, never the one read before it.
    await append(trace, BATCHES[0])
    late = connect(trace.pk, api_token)
    await late.connect()
    snapshot = await late.receive_json_from(timeout=10)
    assert snapshot["seq"] == 2 and "live-1" in {e["id"] for e in snapshot["events"]} and len(reads) == 2
    for ws in [*viewers, late]:
        await ws.disconnect()


async def test_viewers_filling_the_same_gap_read_it_once(trace, api_token, monkeypatch, in_time, captured):
    reads: list[int] = []
    original = TraceConsumer.get_delta_since

    def counted(self, target, seq):
        reads.append(seq)
        return original(self, target, seq)

    monkeypatch.setattr(TraceConsumer, "get_delta_since", counted)
    viewers = [connect(trace.pk, api_token) for _ in range(4)]
    for ws in viewers:
        assert (await ws.connect())[0]
        await ws.receive_json_from(timeout=10)
    seq = await append(trace, [{"id": f"big-{i}", "t": 9 + i, "type": "message", "agent": "adder"} for i in range(3)])
    await database_sync_to_async(broadcast.broadcast_trace_seq)(trace.pk, seq)  # a batch sent by reference
    deltas = [await ws.receive_json_from(timeout=10) for ws in viewers]
    assert reads == [1]
    assert all(d["seq"] == seq and {e["id"] for e in d["events"]} == {"big-0", "big-1", "big-2"} for d in deltas)
    for ws in viewers:
        await ws.disconnect()


@pytest.fixture
def outsider(db, django_user_model):
    """A token of a user of another project only."""
    user = django_user_model.objects.create_user("mallory", password="mallory-password-1")
    other = do_get_or_create_project("Other project")
    do_add_member(other, user, "admin")
    return do_create_token(user, other, "mallory's")[1]


async def test_shared_reads_still_check_each_sockets_rights(trace, api_token, member, project, outsider, captured):
    ws = connect(trace.pk, api_token)
    assert (await ws.connect())[0]
    snapshot = await ws.receive_json_from(timeout=10)

    # A snapshot just read for another viewer is not handed to a caller who may not read the trace.
    intruder = connect(trace.pk, outsider)
    assert (await intruder.connect())[0]
    assert await intruder.receive_output(timeout=10) == {"type": "websocket.close", "code": 4404}
    await intruder.disconnect()

    # Two viewers lag on the same deltas; one's token is revoked: only the other gets the catch-up.
    second_token = await database_sync_to_async(lambda: do_create_token(member, project, "second")[1])()
    second = connect(trace.pk, second_token)
    assert (await second.connect())[0]
    await second.receive_json_from(timeout=10)
    for batch in BATCHES:
        await append(trace, batch)
    await database_sync_to_async(lambda: do_revoke_token(ApiToken.objects.get(token_hash=hash_token(api_token))))()
    error = await ws.receive_json_from(timeout=10)
    assert error["type"] == "error" and "API token revoked" in error["message"]
    assert (await ws.receive_output(timeout=10))["code"] == 4401
    await group_send(trace.pk, captured[0], waited_s=10)
    coalesced = await second.receive_json_from(timeout=10)
    assert coalesced["seq"] == 4 and strip(protocol.apply_delta(snapshot, coalesced)) == strip(
        await database_sync_to_async(services.get_snapshot)(trace, with_metrics=False)
    )
    assert await ws.receive_nothing(timeout=0.5)
    for socket in (ws, second):
        await socket.disconnect()


async def test_a_shared_rights_check_is_per_caller(trace, api_token, member, project, monkeypatch, in_time):
    """Sockets of one token share its periodic re-check; a revocation with no broadcast (a bulk
    update) closes each of them before the next delivery, and a socket of another token is not
    answered from theirs."""
    monkeypatch.setattr(TraceConsumer, "RECHECK_S", 0.0)
    other_token = await database_sync_to_async(lambda: do_create_token(member, project, "other")[1])()
    same = [connect(trace.pk, api_token) for _ in range(3)]
    other = connect(trace.pk, other_token)
    for ws in [*same, other]:
        assert (await ws.connect())[0]
        await ws.receive_json_from(timeout=10)
    await database_sync_to_async(
        lambda: ApiToken.objects.filter(token_hash=hash_token(api_token)).update(revoked_at=timezone.now())
    )()
    await append(trace, BATCHES[0])
    for ws in same:
        error = await ws.receive_json_from(timeout=10)
        assert error["type"] == "error" and "API token revoked" in error["message"]
        assert (await ws.receive_output(timeout=10))["code"] == 4401
    assert (await other.receive_json_from(timeout=10))["seq"] == 2
    for ws in [*same, other]:
        await ws.disconnect()
