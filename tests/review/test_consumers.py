"""`/ws/projects/<id>/`: review activity arrives live as numbered deltas after a snapshot of the recent
activity, with resume by seq; members only, checked on every message. Every message received is
checked against its schema (swarmscope.protocol_schema)."""

import json

import pytest
from channels.db import database_sync_to_async

from tests.live_socket import CheckedCommunicator
from webapp.accounts.models import ApiToken, hash_token
from webapp.accounts.services import do_revoke_token
from webapp.review import feed
from webapp.web import sockets

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services, pytest.mark.timeout(60)]


def connect(project_id, token, query=""):
    return CheckedCommunicator("review", f"/ws/projects/{project_id}/?token={token}{query}")


@database_sync_to_async
def api(team, name, method, url, doc):
    return getattr(team.client(name), method)(url, data=json.dumps(doc), content_type="application/json")


def comment(team, body, name="rev"):
    return api(
        team, name, "post", "/api/review/comments/", {"kind": "attribution", "id": team.attribution_a.pk, "body": body}
    )


async def test_comment_and_vote_arrive_live_then_resume(team):
    ws = connect(team.a.pk, team.tokens["vic"])
    assert (await ws.connect())[0]
    snapshot = await ws.receive_json_from(timeout=10)
    assert snapshot == {"type": "snapshot", "seq": 0, "project": team.a.pk, "activities": []}
    response = await comment(team, "Too high, @bob")
    assert response.status_code == 201
    message = await ws.receive_json_from(timeout=10)
    assert message["type"] == "delta" and len(message["activities"]) == 1
    activity = message["activities"][0]
    assert message["seq"] == activity["id"] and activity["verb"] == "commented"
    assert activity["data"]["comment"]["body_html"] == "<p>Too high, @bob</p>"
    assert activity["mentions"] == ["bob"]
    await api(
        team,
        "bob",
        "put",
        f"/api/review/attributions/{team.attribution_a.pk}/votes/",
        {"value": "disagree", "reason": "see comment"},
    )
    voted = await ws.receive_json_from(timeout=10)
    vote = voted["activities"][0]
    assert voted["seq"] == vote["id"] and vote["verb"] == "voted" and vote["data"]["votes"]["disagree"] == 1
    await ws.send_json_to({"type": "resume", "seq": activity["id"] - 1})
    replay = await ws.receive_json_from(timeout=10)  # one delta folds what came after the seq
    assert replay["type"] == "delta" and replay["seq"] == vote["id"]
    assert [a["id"] for a in replay["activities"]] == [activity["id"], vote["id"]]
    await ws.send_json_to({"type": "nonsense"})
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.send_to(text_data="{not json")
    assert (await ws.receive_json_from(timeout=10))["type"] == "error"
    await ws.send_json_to({"type": "resume", "seq": vote["id"] + 1000})  # a seq it was never sent: start over
    again = await ws.receive_json_from(timeout=10)
    assert again["type"] == "snapshot" and [a["id"] for a in again["activities"]] == [activity["id"], vote["id"]]
    await ws.disconnect()


async def test_reconnect_with_seq_gets_only_what_it_missed(team):
    await comment(team, "first")
    ws = connect(team.a.pk, team.tokens["ann"])
    await ws.connect()
    snapshot = await ws.receive_json_from(timeout=10)
    assert [a["data"]["comment"]["body"] for a in snapshot["activities"]] == ["first"]
    await ws.disconnect()
    await comment(team, "second")
    await comment(team, "third", name="bob")
    again = connect(team.a.pk, team.tokens["ann"], f"&seq={snapshot['seq']}")
    await again.connect()
    missed = await again.receive_json_from(timeout=10)
    assert missed["type"] == "delta"
    assert [a["data"]["comment"]["body"] for a in missed["activities"]] == ["second", "third"]
    assert missed["seq"] == missed["activities"][-1]["id"]
    await again.disconnect()


async def test_activity_of_another_project_takes_ids_but_is_not_sent(team):
    """Activity ids are shared by every project: a project's seqs have holes, and the consumer fills
    what lies between from the database rather than waiting for seq + 1."""
    ws = connect(team.a.pk, team.tokens["ann"])
    await ws.connect()
    await ws.receive_json_from(timeout=10)
    await api(team, "zed", "post", "/api/review/comments/", {"kind": "trace", "id": team.trace_b.pk, "body": "in B"})
    await comment(team, "in A")
    message = await ws.receive_json_from(timeout=10)
    assert [a["data"]["comment"]["body"] for a in message["activities"]] == ["in A"]
    assert message["seq"] == message["activities"][0]["id"] > 1
    assert await ws.receive_nothing(timeout=0.5)
    await ws.disconnect()


async def test_a_feed_too_big_for_a_socket_message_refers_to_http(team, monkeypatch):
    for i in range(3):
        await comment(team, f"comment {i} " + "x" * 400)
    monkeypatch.setattr(sockets, "MAX_SOCKET_BYTES", 1000)
    ws = connect(team.a.pk, team.tokens["ann"])
    await ws.connect()
    referral = await ws.receive_json_from(timeout=10)
    assert referral["type"] == "error" and referral["code"] == "snapshot_too_large"
    assert f"/api/review/projects/{team.a.pk}/activity/" in referral["message"]
    assert referral["seq"] == await database_sync_to_async(feed.last_activity_id)(team.a.pk)
    await ws.disconnect()
    again = connect(team.a.pk, team.tokens["ann"], f"&seq={referral['seq']}")
    await again.connect()
    assert await again.receive_nothing(timeout=0.5)  # nothing came after the referral's seq
    await comment(team, "short")
    delta = await again.receive_json_from(timeout=10)
    assert [a["data"]["comment"]["body"] for a in delta["activities"]] == ["short"]
    await again.disconnect()


async def test_foreign_unknown_project_closes_4404_and_a_revoked_token_4401(team):
    for project_id in (team.b.pk, 999999):
        ws = connect(project_id, team.tokens["ann"])
        await ws.connect()
        assert (await ws.receive_output(timeout=10))["code"] == 4404
        await ws.disconnect()
    # A token revoked while connected: the socket is told and closed at once, without a message
    # from the client (tests/web/test_socket_security.py measures the delay on every socket).
    ws = connect(team.a.pk, team.tokens["rev"])
    assert (await ws.connect())[0]
    await ws.receive_json_from(timeout=10)
    await database_sync_to_async(
        lambda: do_revoke_token(ApiToken.objects.get(token_hash=hash_token(team.tokens["rev"])))
    )()
    assert await ws.receive_json_from(timeout=10) == {"type": "error", "message": "API token revoked"}
    assert (await ws.receive_output(timeout=10))["code"] == 4401
    await ws.disconnect()


# --- /ws/users/<id>/notifications/: the header's bell ---------------------------------------------


def bell(team, name, user_name=None):
    user = team.users[user_name or name]
    return CheckedCommunicator("notifications", f"/ws/users/{user.pk}/notifications/?token={team.tokens[name]}")


async def test_a_mention_rings_the_bell_socket_of_the_mentioned_user_only(team):
    bob, rev = bell(team, "bob"), bell(team, "rev")
    for ws in (bob, rev):
        assert (await ws.connect())[0]
    bob_user = team.users["bob"].pk
    assert await bob.receive_json_from(timeout=10) == {"type": "snapshot", "seq": 0, "user": bob_user, "unread": 0}
    assert (await rev.receive_json_from(timeout=10))["unread"] == 0
    assert (await comment(team, "Have a look, @bob")).status_code == 201
    delta = await bob.receive_json_from(timeout=10)
    assert delta["type"] == "delta" and delta["unread"] == 1 and delta["seq"] == delta["notifications"][0]["id"]
    assert delta["notifications"][0]["actor"] == "rev" and delta["notifications"][0]["project"] == team.a.pk
    assert await rev.receive_nothing(timeout=0.5)  # the author is not mentioned: nothing on their socket
    # Reading them on another page sends a fresh count.
    read = await api(team, "bob", "post", "/api/review/notifications/read/", {})
    assert read.status_code == 200, read.content
    again = await bob.receive_json_from(timeout=10)
    assert again == {"type": "snapshot", "seq": delta["seq"], "user": bob_user, "unread": 0}
    for ws in (bob, rev):
        await ws.disconnect()


async def test_another_users_bell_socket_is_refused(team):
    ws = bell(team, "rev", user_name="bob")  # rev's token on bob's notifications
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_output(timeout=10))["code"] == 4404
    await ws.disconnect()
