"""`/ws/projects/<id>/`: review activity arrives live; members only, checked on every message."""

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from webapp.accounts.models import ApiToken, hash_token
from webapp.accounts.services import do_revoke_token
from webapp.config.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(60)]


def connect(project_id, token, query=""):
    return WebsocketCommunicator(application, f"/ws/projects/{project_id}/?token={token}{query}",
                                 headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")])


@database_sync_to_async
def api(team, name, method, url, doc):
    return getattr(team.client(name), method)(url, data=json.dumps(doc), content_type="application/json")


async def test_comment_and_vote_arrive_live_then_resume(team):
    ws = connect(team.a.pk, team.tokens["vic"])
    assert (await ws.connect())[0]
    hello = await ws.receive_json_from(timeout=10)
    assert hello == {"type": "hello", "project": team.a.pk, "last_activity": 0}
    response = await api(team, "rev", "post", "/api/review/comments/",
                         {"kind": "attribution", "id": team.attribution_a.pk, "body": "Too high, @bob"})
    assert response.status_code == 201
    message = await ws.receive_json_from(timeout=10)
    assert message["type"] == "activity" and message["activity"]["verb"] == "commented"
    assert message["activity"]["data"]["comment"]["body_html"] == "<p>Too high, @bob</p>"
    assert message["activity"]["mentions"] == ["bob"]
    await api(team, "bob", "put", f"/api/review/attributions/{team.attribution_a.pk}/votes/",
              {"value": "disagree", "reason": "see comment"})
    vote = (await ws.receive_json_from(timeout=10))["activity"]
    assert vote["verb"] == "voted" and vote["data"]["votes"]["disagree"] == 1
    await ws.send_json_to({"type": "resume", "after": message["activity"]["id"] - 1})
    replay = [await ws.receive_json_from(timeout=10) for _ in range(2)]
    assert [m["activity"]["id"] for m in replay] == [message["activity"]["id"], vote["id"]]
    await ws.send_json_to({"type": "nonsense"})
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.send_to(text_data="{not json")
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.disconnect()


async def test_foreign_unknown_project_and_revoked_token_close_4404(team):
    for project_id in (team.b.pk, 999999):
        ws = connect(project_id, team.tokens["ann"])
        await ws.connect()
        assert (await ws.receive_output(timeout=10))["code"] == 4404
        await ws.disconnect()
    # A token revoked while connected: the next message closes the socket.
    ws = connect(team.a.pk, team.tokens["rev"])
    assert (await ws.connect())[0]
    await ws.receive_json_from(timeout=10)
    await database_sync_to_async(lambda: do_revoke_token(
        ApiToken.objects.get(token_hash=hash_token(team.tokens["rev"]))))()
    await ws.send_json_to({"type": "ping"})
    assert (await ws.receive_output(timeout=10))["code"] == 4404
    await ws.disconnect()
