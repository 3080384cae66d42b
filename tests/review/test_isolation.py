"""A member of project A can neither read nor write anything of project B: pages, REST API, OTLP,
websockets and guessed ids all answer as for an unknown object (404, or close code 4404)."""

import json

import pytest
from channels.testing import WebsocketCommunicator

from webapp.accounts.models import ApiToken, hash_token
from webapp.accounts.services import do_revoke_token
from webapp.config.asgi import application
from webapp.review import services as review
from webapp.traces.models import Event, Trace

pytestmark = [pytest.mark.services]

UNKNOWN = 987654


def reads(team, b_comment_id):
    """GET URLs of project B's objects, and the same URL with an id nobody has."""
    tb, ab, pb = team.trace_b.pk, team.attribution_b.pk, team.b.pk
    pairs = []
    for template, foreign in [
        ("/api/traces/{}/", tb),
        ("/api/traces/{}/snapshot/", tb),
        ("/api/traces/{}/export/", tb),
        ("/api/traces/{}/attributions/", tb),
        ("/api/review/traces/{}/status/", tb),
        ("/api/review/traces/{}/mistake-labels/", tb),
        ("/api/review/attributions/{}/votes/", ab),
        ("/api/review/comments/{}/", b_comment_id),
        ("/api/review/projects/{}/activity/", pb),
        ("/api/review/projects/{}/agreement/", pb),
    ]:
        pairs.append((template.format(foreign), template.format(UNKNOWN)))
    pairs.append((f"/api/review/comments/?trace={tb}", f"/api/review/comments/?trace={UNKNOWN}"))
    pairs.append(
        (f"/api/review/comments/?kind=attribution&id={ab}", f"/api/review/comments/?kind=attribution&id={UNKNOWN}")
    )
    return pairs


def json_write(client, method, url, doc):
    return getattr(client, method)(url, data=json.dumps(doc), content_type="application/json")


@pytest.mark.django_db
def test_api_reads_of_another_project_answer_404_like_unknown_ids(team):
    b_comment = review.do_comment(team.users["zed"], review.get_target([team.b.pk], "trace", team.trace_b.pk), "B only")
    ann = team.client("ann")  # admin of A: the highest role there
    for foreign, unknown in reads(team, b_comment.pk):
        got, missing = ann.get(foreign), ann.get(unknown)
        assert got.status_code == 404, foreign
        assert (got.status_code, got.content) == (missing.status_code, missing.content), foreign
    listed = ann.get("/api/traces/").json()["results"]
    assert [t["id"] for t in listed] == [team.trace_a.pk]
    exported = ann.get(f"/api/traces/export.jsonl?ids={team.trace_b.pk}")
    unknown = ann.get(f"/api/traces/export.jsonl?ids={UNKNOWN}")
    assert exported.status_code == unknown.status_code == 404  # as unknown, but for the id it names
    assert exported.content.replace(str(team.trace_b.pk).encode(), b"N") == unknown.content.replace(
        str(UNKNOWN).encode(), b"N"
    )
    assert ann.get(f"/api/traces/{2**64}/").status_code == 404  # beyond 64 bits: still a clean 404


@pytest.mark.django_db
def test_api_writes_to_another_project_answer_404_and_change_nothing(team):
    b_comment = review.do_comment(team.users["zed"], review.get_target([team.b.pk], "trace", team.trace_b.pk), "B only")
    ann = team.client("ann")
    tb = team.trace_b.pk
    writes = [
        ("post", f"/api/traces/{tb}/events/", [{"id": "x1", "t": 9.0, "type": "message", "agent": "adder"}]),
        ("post", "/api/review/comments/", {"kind": "trace", "id": tb, "body": "leak?"}),
        ("post", "/api/review/comments/", {"kind": "event", "trace": tb, "id": "e5", "body": "leak?"}),
        ("post", "/api/review/comments/", {"kind": "attribution", "id": team.attribution_b.pk, "body": "leak?"}),
        (
            "post",
            "/api/review/comments/",
            {"kind": "trace", "id": team.trace_a.pk, "body": "reply", "parent": b_comment.pk},
        ),
        ("patch", f"/api/review/comments/{b_comment.pk}/", {"body": "edited"}),
        ("delete", f"/api/review/comments/{b_comment.pk}/", {}),
        ("put", f"/api/review/attributions/{team.attribution_b.pk}/votes/", {"value": "agree"}),
        ("put", f"/api/review/traces/{tb}/status/", {"status": "settled"}),
        ("put", f"/api/review/traces/{tb}/mistake-labels/", {"agent": "adder", "event_id": "e5"}),
        ("post", f"/api/traces/{tb}/attributions/run/", {"method": "loo"}),
    ]
    before = (Event.objects.filter(trace_id=tb).count(), Trace.objects.get(pk=tb).seq)
    for method, url, doc in writes:
        assert json_write(ann, method, url, doc).status_code == 404, (method, url)
    b_comment.refresh_from_db()
    assert b_comment.body == "B only" and b_comment.deleted_at is None
    assert (Event.objects.filter(trace_id=tb).count(), Trace.objects.get(pk=tb).seq) == before
    assert not team.trace_b.comments.exclude(pk=b_comment.pk).exists()
    assert not team.attribution_b.votes.exists() and not hasattr(Trace.objects.get(pk=tb), "review")


@pytest.mark.django_db
def test_pages_of_another_project_answer_404(team, client):
    client.force_login(team.users["ann"])
    for url in [
        f"/traces/{team.trace_b.pk}/",
        f"/traces/{team.trace_b.pk}/delete/",
        f"/projects/{team.b.pk}/members/",
        f"/projects/{team.b.pk}/settings/",
        f"/projects/{team.b.pk}/delete/",
        f"/traces/compare/?left={team.trace_a.pk}&right={team.trace_b.pk}",
    ]:
        assert client.get(url).status_code == 404, url
    for url, data in [
        (f"/traces/{team.trace_b.pk}/delete/", {}),
        (f"/projects/{team.b.pk}/delete/", {"confirm_name": "Project B"}),
        (f"/projects/{team.b.pk}/members/", {"action": "invite", "role": "admin"}),
    ]:
        assert client.post(url, data).status_code == 404, url
    assert Trace.objects.filter(pk=team.trace_b.pk).exists() and not team.b.invitations.exists()
    assert "Project B" not in client.get("/projects/").content.decode()
    assert str(team.trace_b.pk) not in [str(t["id"]) for t in client.get("/api/traces/").json()["results"]]


@pytest.mark.django_db
def test_otlp_with_a_token_of_a_writes_only_into_a(team, fixtures):
    body = (fixtures / "otlp_genai_small.json").read_bytes()
    zed, ann = team.client("zed"), team.client("ann")
    assert zed.post("/v1/traces", data=body, content_type="application/json").status_code == 200
    b_trace = Trace.objects.get(project=team.b, source_format__icontains="otlp")
    b_state = (b_trace.seq, b_trace.event_count)
    # The same OTLP trace id sent with A's token lands in A, as a trace of its own.
    assert ann.post("/v1/traces", data=body, content_type="application/json").status_code == 200
    a_trace = Trace.objects.get(project=team.a, source_format__icontains="otlp")
    assert a_trace.pk != b_trace.pk and a_trace.identity_key == b_trace.identity_key
    b_trace.refresh_from_db()
    assert (b_trace.seq, b_trace.event_count) == b_state


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
async def test_websockets_of_another_project_close_4404(team):
    for path in (f"/ws/traces/{team.trace_b.pk}/", f"/ws/projects/{team.b.pk}/", f"/ws/traces/{UNKNOWN}/"):
        ws = WebsocketCommunicator(
            application,
            f"{path}?token={team.tokens['ann']}",
            headers=[(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")],
        )
        await ws.connect()
        assert (await ws.receive_output(timeout=10))["code"] == 4404, path
        await ws.disconnect()


@pytest.mark.django_db
def test_a_revoked_token_stops_working_at_once(team, fixtures):
    rev = team.client("rev")
    assert rev.get(f"/api/traces/{team.trace_a.pk}/").status_code == 200
    do_revoke_token(ApiToken.objects.get(token_hash=hash_token(team.tokens["rev"])))
    assert rev.get(f"/api/traces/{team.trace_a.pk}/").status_code == 401
    assert (
        json_write(
            rev, "post", "/api/review/comments/", {"kind": "trace", "id": team.trace_a.pk, "body": "x"}
        ).status_code
        == 401
    )
    assert (
        rev.post(
            "/v1/traces", data=(fixtures / "otlp_genai_small.json").read_bytes(), content_type="application/json"
        ).status_code
        == 401
    )
