"""`/ws/runs/<id>/` through Channels' WebsocketCommunicator: snapshot, numbered deltas as iterations
are stored, resume after a gap or a reconnect, refusals — the protocol of `/ws/traces/<id>/`; every
message received is checked against its schema (swarmscope.protocol_schema)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from swarmscope import protocol
from tests.live_socket import CheckedCommunicator
from tests.training.conftest import TINY
from webapp.training import services
from webapp.web import sockets

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(60)]


def connect(run_id, token, query=""):
    return CheckedCommunicator("run", f"/ws/runs/{run_id}/?token={token}{query}")


def no_clock(snapshot):
    return {**snapshot, "run": {k: v for k, v in snapshot["run"].items() if k != "eta_s"}}


@pytest.fixture
def run(project):
    return services.do_create_run(project, TINY, external=True)


async def test_snapshot_then_deltas_then_resume(run, api_token, iterations):
    ws = connect(run.pk, api_token)
    assert (await ws.connect())[0]
    snapshot = await ws.receive_json_from(timeout=10)
    assert snapshot["type"] == "snapshot" and snapshot["iterations"] == [] and snapshot["run"]["id"] == run.pk
    record = database_sync_to_async(services.do_record_iteration)
    for doc in iterations:
        await record(run, doc)
    deltas = [await ws.receive_json_from(timeout=10) for _ in iterations]
    assert [d["seq"] for d in deltas] == list(range(snapshot["seq"] + 1, snapshot["seq"] + 1 + len(iterations)))
    assert [d["iterations"][0]["iteration"] for d in deltas] == [d["iteration"] for d in iterations]
    assert deltas[0]["iterations"][0]["stop"]["stop_regret"] == iterations[0]["stop"]["stop_regret"]
    state = snapshot
    for delta in deltas:
        state = protocol.apply_run_delta(state, delta)
    await ws.send_json_to({"type": "resume", "seq": snapshot["seq"]})
    folded = await ws.receive_json_from(timeout=10)
    assert folded["type"] == "delta" and len(folded["iterations"]) == len(iterations)
    fresh = await database_sync_to_async(services.get_snapshot)(run)
    assert no_clock(state) == no_clock(fresh) == no_clock(protocol.apply_run_delta(snapshot, folded))
    await ws.disconnect()


async def test_reconnect_with_seq_gets_only_what_it_missed(run, api_token, iterations):
    ws = connect(run.pk, api_token)
    await ws.connect()
    snapshot = await ws.receive_json_from(timeout=10)
    await ws.disconnect()
    await database_sync_to_async(services.do_record_iteration)(run, iterations[0])
    await database_sync_to_async(services.do_finish)(run)
    again = connect(run.pk, api_token, f"&seq={snapshot['seq']}")
    await again.connect()
    missed = await again.receive_json_from(timeout=10)
    assert missed["type"] == "delta" and missed["seq"] == snapshot["seq"] + 2
    assert [it["iteration"] for it in missed["iterations"]] == [0] and missed["run"]["status"] == "finished"
    await again.disconnect()


async def test_bad_messages_and_foreign_runs(run, api_token, django_user_model):
    ws = connect(run.pk, api_token)
    await ws.connect()
    await ws.receive_json_from(timeout=10)
    await ws.send_to(text_data="{nope")
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.send_json_to({"type": "subscribe"})
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.send_json_to({"type": "resume", "seq": "x"})
    assert (await ws.receive_json_from(timeout=10))["type"] == "snapshot"  # an unusable seq: start over
    await ws.disconnect()

    from webapp.accounts.services import (
        do_add_member,
        do_create_token,
        do_get_or_create_project,
    )

    def foreign_token():
        user = django_user_model.objects.create_user("mallory", password="mallory-password-1")
        project = do_get_or_create_project("Elsewhere")
        do_add_member(project, user, "admin")
        return do_create_token(user, project, "t")[1]

    other = connect(run.pk, await database_sync_to_async(foreign_token)())
    await other.connect()
    assert (await other.receive_output(timeout=10))["code"] == 4404
    await other.disconnect()
    unknown = connect(run.pk, "ssk_unknown")
    await unknown.connect()
    assert (await unknown.receive_json_from(timeout=10))["type"] == "error"
    assert (await unknown.receive_output(timeout=10))["code"] == 4401
    await unknown.disconnect()


async def test_a_run_too_big_for_one_message_is_referred_to_http(run, api_token, iterations, monkeypatch):
    for doc in iterations:
        await database_sync_to_async(services.do_record_iteration)(run, doc)
    monkeypatch.setattr(sockets, "MAX_SOCKET_BYTES", 2000)
    ws = connect(run.pk, api_token)
    await ws.connect()
    referred = await ws.receive_json_from(timeout=10)
    assert referred["type"] == "error" and referred["code"] == "snapshot_too_large"
    assert f"/api/runs/{run.pk}/snapshot/" in referred["message"]
    await ws.disconnect()
    snapshot = await database_sync_to_async(services.get_snapshot)(run)  # what the client fetches over HTTP
    again = connect(run.pk, api_token, f"&seq={snapshot['seq']}")
    await again.connect()
    await database_sync_to_async(services.do_finish)(run)
    delta = await again.receive_json_from(timeout=10)
    assert delta["type"] == "delta" and delta["seq"] == snapshot["seq"] + 1 and delta["run"]["status"] == "finished"
    await again.disconnect()
