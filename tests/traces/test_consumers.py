"""`/ws/traces/<id>/` through Channels' WebsocketCommunicator: snapshot, deltas, resume, refusals;
every message received is checked against its schema (swarmscope.protocol_schema)."""

import json

import pytest
from channels.db import database_sync_to_async

from swarmscope import model as core
from swarmscope import protocol
from tests.live_socket import CheckedCommunicator
from webapp.traces import ingest, services
from webapp.web import sockets

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(60)]


@pytest.fixture
def trace(project, fixtures):
    return ingest.do_ingest(
        project, core.trace_from_dict(json.loads((fixtures / "native_small.json").read_text()))
    ).trace


def connect(trace_id, token):
    return CheckedCommunicator("trace", f"/ws/traces/{trace_id}/?token={token}")


@database_sync_to_async
def append(trace, events):
    fragment = core.Trace(source_format=trace.source_format, source_id=trace.source_id)
    fragment.events = [core.event_from_dict(e) for e in events]
    return ingest.do_ingest(trace.project, fragment, trace=trace, live=True).seq


def strip(snapshot):
    return protocol.canonical({k: v for k, v in snapshot.items() if k != "trace"})


async def test_snapshot_then_numbered_deltas_then_resume(trace, api_token):
    ws = connect(trace.pk, api_token)
    connected, _ = await ws.connect()
    assert connected
    snapshot = await ws.receive_json_from(timeout=10)
    assert snapshot["type"] == "snapshot" and snapshot["seq"] == 1 and len(snapshot["events"]) == 11
    assert "critical_steps" in snapshot["trace"]["computed_metrics"]

    opened = {"id": "live-1", "t": 7.0, "type": "message", "agent": "adder", "to": "orchestrator"}
    await append(trace, [opened])
    await append(
        trace, [{**opened, "t_end": 7.25}, {"id": "live-2", "t": 7.5, "type": "stop", "agent": "orchestrator"}]
    )
    first, second = await ws.receive_json_from(timeout=10), await ws.receive_json_from(timeout=10)
    assert (first["seq"], second["seq"]) == (2, 3)
    assert "t_end" not in first["events"][0]
    assert {e["id"]: e.get("t_end") for e in second["events"]} == {"live-1": 7.25, "live-2": None}
    state = protocol.apply_delta(protocol.apply_delta(snapshot, first), second)

    await ws.send_json_to({"type": "resume", "seq": 1})
    resumed = await ws.receive_json_from(timeout=10)
    assert resumed["type"] == "delta" and resumed["seq"] == 3
    assert {e["id"] for e in resumed["events"]} == {"live-1", "live-2"}
    fresh = await database_sync_to_async(services.get_snapshot)(trace, with_metrics=False)
    assert strip(state) == strip(fresh) == strip(protocol.apply_delta(snapshot, resumed))
    await ws.disconnect()


async def test_reconnect_resumes_with_nothing_missed(trace, api_token):
    ws = connect(trace.pk, api_token)
    await ws.connect()
    snapshot = await ws.receive_json_from(timeout=10)
    await ws.disconnect()
    await append(trace, [{"id": f"m{i}", "t": 10 + i, "type": "message", "agent": "adder"} for i in range(3)])
    again = connect(trace.pk, api_token)
    await again.connect()
    await again.receive_json_from(timeout=10)  # a fresh snapshot; the client asks for what it missed:
    await again.send_json_to({"type": "resume", "seq": snapshot["seq"]})
    missed = await again.receive_json_from(timeout=10)
    assert [e["id"] for e in missed["events"]] == ["m0", "m1", "m2"]
    await again.disconnect()


async def test_bad_messages_get_an_error_and_the_socket_survives(trace, api_token):
    ws = connect(trace.pk, api_token)
    await ws.connect()
    await ws.receive_json_from(timeout=10)
    await ws.send_to(text_data="{not json")
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.send_json_to({"type": "resume", "seq": "soon"})
    assert (await ws.receive_json_from(timeout=10))["type"] == "snapshot"
    await ws.send_json_to(["what"])
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.disconnect()


async def test_unknown_or_foreign_trace_closes_4404(trace, api_token):
    ws = CheckedCommunicator("trace", f"/ws/traces/{trace.pk + 1000}/?token={api_token}")
    connected, _ = await ws.connect()
    assert connected
    assert await ws.receive_output(timeout=10) == {"type": "websocket.close", "code": 4404}
    await ws.disconnect()  # end the consumer, as a client's socket closing does


async def test_a_bad_token_or_no_caller_closes_4401_with_the_reason(trace):
    for path, reason in (
        (f"/ws/traces/{trace.pk}/?token=wrong", "invalid or revoked API token"),
        (f"/ws/traces/{trace.pk}/", "authentication required: log in, or connect with ?token=<API token>"),
    ):
        ws = CheckedCommunicator("trace", path)
        assert (await ws.connect())[0]
        assert await ws.receive_json_from(timeout=10) == {"type": "error", "message": reason}
        assert await ws.receive_output(timeout=10) == {"type": "websocket.close", "code": 4401, "reason": reason}
        await ws.disconnect()


async def test_token_clients_need_no_origin_but_session_clients_do(trace, api_token):
    """A token is not an ambient credential, so scripts connect without an Origin header; cookie
    sessions keep the browser's same-origin check."""
    ws = CheckedCommunicator("trace", f"/ws/traces/{trace.pk}/?token={api_token}", headers=[(b"host", b"127.0.0.1")])
    connected, _ = await ws.connect()
    assert connected and (await ws.receive_json_from(timeout=10))["type"] == "snapshot"
    await ws.disconnect()
    foreign = CheckedCommunicator(
        "trace", f"/ws/traces/{trace.pk}/", headers=[(b"origin", b"http://evil.example"), (b"host", b"127.0.0.1")]
    )
    connected, _ = await foreign.connect()
    assert not connected
    await foreign.disconnect()


async def test_deeply_nested_message_gets_an_error(trace, api_token):
    ws = connect(trace.pk, api_token)
    await ws.connect()
    await ws.receive_json_from(timeout=10)
    await ws.send_to(text_data="[" * 5000 + "]" * 5000)
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.disconnect()


async def test_catch_up_too_big_for_a_socket_message_refers_to_http(trace, api_token, monkeypatch):
    monkeypatch.setattr(sockets, "MAX_SOCKET_BYTES", 100_000)  # 3,001 events are about 250 kB of JSON
    ws = connect(trace.pk, api_token)
    await ws.connect()
    snapshot = await ws.receive_json_from(timeout=10)
    await ws.disconnect()
    await append(trace, [{"id": f"bulk{i}", "t": 20 + i, "type": "message", "agent": "adder"} for i in range(3001)])
    again = CheckedCommunicator(
        "trace", f"/ws/traces/{trace.pk}/?token={api_token}&seq={snapshot['seq']}", headers=[(b"host", b"127.0.0.1")]
    )
    await again.connect()
    referral = await again.receive_json_from(timeout=30)
    assert referral["type"] == "error" and referral["code"] == "snapshot_too_large"
    assert referral["seq"] == snapshot["seq"] + 1
    assert f"/api/traces/{trace.pk}/snapshot/" in referral["message"]
    await again.disconnect()


async def test_a_live_batch_too_big_for_a_socket_message_refers_to_http(trace, api_token, monkeypatch):
    monkeypatch.setattr(sockets, "MAX_SOCKET_BYTES", 100_000)
    ws = connect(trace.pk, api_token)
    await ws.connect()
    snapshot = await ws.receive_json_from(timeout=10)
    await append(trace, [{"id": f"big{i}", "t": 20 + i, "type": "message", "agent": "adder"} for i in range(3001)])
    referral = await ws.receive_json_from(timeout=30)
    assert referral["type"] == "error" and referral["code"] == "snapshot_too_large"
    assert referral["seq"] == snapshot["seq"] + 1
    await append(trace, [{"id": "small", "t": 9000, "type": "stop", "agent": "orchestrator"}])
    after = await ws.receive_json_from(timeout=10)  # the socket goes on from the referral's seq
    assert after["type"] == "delta" and after["seq"] == referral["seq"] + 1
    await ws.disconnect()
