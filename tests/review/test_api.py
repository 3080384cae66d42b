"""The review REST API: comments (Markdown, sanitised, threads, mentions, edit/delete), votes,
review status, mistake labels with Cohen's kappa, the activity feed, and roles."""

import json
import re

import pytest

from .conftest import ingest

pytestmark = [pytest.mark.django_db, pytest.mark.services]

COMMENTS = "/api/review/comments/"


def post(client, url, doc, method="post"):
    return getattr(client, method)(url, data=json.dumps(doc), content_type="application/json")


def comment(client, body, **target):
    return post(client, COMMENTS, {"body": body, **target})


def test_comment_is_rendered_sanitised_with_mentions(team):
    body = (
        "**Credit** looks too high for `e5`, @bob @nobody @zed.\n\n<script>alert(1)</script>\n\n"
        "[see](javascript:alert(2)) <img src=x onerror=alert(3)>"
    )
    response = comment(team.client("rev"), body, kind="attribution", id=team.attribution_a.pk)
    assert response.status_code == 201, response.content
    doc = response.json()
    html = doc["body_html"]
    assert "<strong>Credit</strong>" in html and "<code>e5</code>" in html
    assert "<script" not in html and "javascript:" not in html and "onerror" not in html and "<img" not in html
    # Only members of the project are mentioned: nobody does not exist, zed is in project B.
    assert doc["mentions"] == ["bob"]
    assert doc["author"] == "rev" and doc["body"] == body
    assert doc["link"] == f"/traces/{team.trace_a.pk}/?attribution={team.attribution_a.pk}"


def test_threads_and_targets(team):
    rev = team.client("rev")
    on_event = comment(rev, "Step e5 repeats e3.", kind="event", trace=team.trace_a.pk, id="e5").json()
    reply = comment(team.client("bob"), "Agreed.", kind="event", trace=team.trace_a.pk, id="e5", parent=on_event["id"])
    assert reply.status_code == 201 and reply.json()["parent"] == on_event["id"]
    # A reply must stay on its parent's target.
    wrong = comment(rev, "x", kind="trace", id=team.trace_a.pk, parent=on_event["id"])
    assert wrong.status_code == 400 and wrong.json()["field"] == "parent"
    comment(rev, "Whole trace note.", kind="trace", id=team.trace_a.pk)
    assert comment(rev, "no such event", kind="event", trace=team.trace_a.pk, id="nope").status_code == 404
    assert comment(rev, "bad kind", kind="agent", id=1).json()["field"] == "kind"
    assert comment(rev, "   ", kind="trace", id=team.trace_a.pk).json()["field"] == "body"

    on_trace = rev.get(COMMENTS, {"trace": team.trace_a.pk}).json()["results"]
    assert [c["body"] for c in on_trace] == ["Step e5 repeats e3.", "Agreed.", "Whole trace note."]
    one = rev.get(COMMENTS, {"kind": "event", "trace": team.trace_a.pk, "id": "e5"}).json()["results"]
    assert [c["author"] for c in one] == ["rev", "bob"]


def test_edit_and_delete_own_comment_only(team):
    rev, bob, ann = team.client("rev"), team.client("bob"), team.client("ann")
    doc = comment(rev, "first @bob", kind="trace", id=team.trace_a.pk).json()
    url = f"{COMMENTS}{doc['id']}/"
    assert post(bob, url, {"body": "hijack"}, "patch").status_code == 403
    edited = post(rev, url, {"body": "second, *edited*"}, "patch").json()
    assert edited["body_html"] == "<p>second, <em>edited</em></p>" and edited["edited_at"] and edited["mentions"] == []
    assert bob.delete(url).status_code == 403  # a reviewer may not delete someone else's
    reply = comment(bob, "reply", kind="trace", id=team.trace_a.pk, parent=doc["id"]).json()
    deleted = rev.delete(url).json()
    assert deleted["deleted"] and deleted["body"] is None and deleted["body_html"] == ""
    # The reply keeps its thread; an admin may delete anyone's comment.
    assert rev.get(f"{COMMENTS}{reply['id']}/").json()["parent"] == doc["id"]
    assert ann.delete(f"{COMMENTS}{reply['id']}/").json()["deleted"]


def test_votes_one_per_reviewer_and_changeable(team):
    url = f"/api/review/attributions/{team.attribution_a.pk}/votes/"
    rev, bob = team.client("rev"), team.client("bob")
    assert post(rev, url, {"value": "agree", "reason": "matches the rollouts"}, "put").json()["agree"] == 1
    post(bob, url, {"value": "agree"}, "put")
    tally = post(rev, url, {"value": "disagree", "reason": "interval crosses zero on re-run"}, "put").json()
    assert (tally["agree"], tally["disagree"]) == (1, 1)
    assert {v["user"]: v["value"] for v in tally["votes"]} == {"rev": "disagree", "bob": "agree"}
    assert post(rev, url, {"value": "maybe"}, "put").json()["field"] == "value"
    assert team.client("vic").get(url).json()["disagree"] == 1


def test_review_status(team):
    url = f"/api/review/traces/{team.trace_a.pk}/status/"
    rev = team.client("rev")
    assert rev.get(url).json()["status"] == "open"
    assert post(rev, url, {"status": "in_review"}, "put").json()["status"] == "in_review"
    assert post(rev, url, {"status": "done"}, "put").json()["field"] == "status"
    assert rev.get(url).json() | {"updated_at": None} == {
        "trace": team.trace_a.pk,
        "status": "in_review",
        "updated_by": "rev",
        "updated_at": None,
    }


def test_viewer_reads_but_cannot_comment_vote_label_or_set_status(team):
    vic = team.client("vic")
    assert comment(vic, "hi", kind="trace", id=team.trace_a.pk).status_code == 403
    assert (
        post(vic, f"/api/review/attributions/{team.attribution_a.pk}/votes/", {"value": "agree"}, "put").status_code
        == 403
    )
    assert post(vic, f"/api/review/traces/{team.trace_a.pk}/status/", {"status": "settled"}, "put").status_code == 403
    assert (
        post(
            vic, f"/api/review/traces/{team.trace_a.pk}/mistake-labels/", {"agent": "adder", "event_id": "e5"}, "put"
        ).status_code
        == 403
    )
    assert vic.get(COMMENTS, {"trace": team.trace_a.pk}).status_code == 200
    from webapp.review.models import Comment, MistakeLabel, TraceReview, Vote

    assert not (
        Comment.objects.exists()
        or Vote.objects.exists()
        or MistakeLabel.objects.exists()
        or TraceReview.objects.exists()
    )


def test_mistake_labels_and_kappa_per_project(team, fixtures):
    # Three more traces of project A (distinct identities) so that two reviewers label four.
    traces = [team.trace_a] + [ingest(team.a, fixtures / "native_small.json", source_id=f"copy-{i}") for i in range(3)]
    labels = {
        "rev": [("adder", "e5"), ("adder", "e5"), ("checker", "e7"), ("orchestrator", "e1")],
        "bob": [("adder", "e5"), ("checker", "e5"), ("checker", "e7"), ("adder", "e1")],
    }
    for name, rows in labels.items():
        for trace, (agent, event_id) in zip(traces, rows):
            response = post(
                team.client(name),
                f"/api/review/traces/{trace.pk}/mistake-labels/",
                {"agent": agent, "event_id": event_id},
                "put",
            )
            assert response.status_code == 200, response.content
    bad = post(
        team.client("rev"),
        f"/api/review/traces/{traces[0].pk}/mistake-labels/",
        {"agent": "ghost", "event_id": "e5"},
        "put",
    )
    assert bad.status_code == 400 and bad.json()["field"] == "agent"
    assert (
        post(
            team.client("rev"),
            f"/api/review/traces/{traces[0].pk}/mistake-labels/",
            {"agent": "adder", "event_id": "e999"},
            "put",
        ).json()["field"]
        == "event_id"
    )

    agreement = team.client("vic").get(f"/api/review/projects/{team.a.pk}/agreement/").json()
    assert agreement["reviewers"] == ["bob", "rev"] and agreement["traces_labelled"] == 4
    (pair,) = agreement["pairs"]
    # Agents: rev = A A C O, bob = A C C A (A adder, C checker, O orchestrator). p_o = 2/4;
    # p_e = p_rev(A)p_bob(A) + p_rev(C)p_bob(C) = (2/4)(2/4) + (1/4)(2/4) = 3/8; κ = (1/2 − 3/8)/(5/8) = 0.2
    assert pair["n_traces"] == 4 and pair["agent"]["observed"] == pytest.approx(0.5)
    assert pair["agent"]["kappa"] == pytest.approx(0.2)
    # Steps: rev = e5 e5 e7 e1, bob = e5 e5 e7 e1: identical. p_o = 1, p_e = (1/2)^2 + (1/4)^2 + (1/4)^2 = 3/8; κ = 1.
    assert pair["step"]["kappa"] == pytest.approx(1.0)
    assert [
        lb["reviewer"]
        for lb in team.client("vic").get(f"/api/review/traces/{traces[1].pk}/mistake-labels/").json()["results"]
    ] == ["bob", "rev"]


def test_activity_feed_records_everything_with_mentions(team):
    rev = team.client("rev")
    comment(rev, "look @bob", kind="trace", id=team.trace_a.pk)
    post(rev, f"/api/review/attributions/{team.attribution_a.pk}/votes/", {"value": "agree"}, "put")
    post(rev, f"/api/review/traces/{team.trace_a.pk}/status/", {"status": "settled"}, "put")
    feed = team.client("vic").get(f"/api/review/projects/{team.a.pk}/activity/").json()["results"]
    assert [a["verb"] for a in feed] == ["set_status", "voted", "commented"]
    assert feed[2]["mentions"] == ["bob"] and feed[2]["data"]["comment"]["body"] == "look @bob"
    assert feed[1]["link"].endswith(f"?attribution={team.attribution_a.pk}")
    after = team.client("vic").get(f"/api/review/projects/{team.a.pk}/activity/", {"after": feed[2]["id"]}).json()
    assert [a["verb"] for a in after["results"]] == ["voted", "set_status"]
    assert team.client("vic").get(f"/api/review/projects/{team.a.pk}/activity/", {"limit": 999}).status_code == 400


def test_session_writes_need_csrf(team, client):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(team.users["rev"])
    assert comment(strict, "x", kind="trace", id=team.trace_a.pk).status_code == 403
    client.force_login(team.users["rev"])
    assert comment(client, "x", kind="trace", id=team.trace_a.pk).status_code == 201


def test_comments_on_a_run_and_they_go_with_it(team):
    from webapp.review.models import Activity, Comment
    from webapp.training.models import Run

    run_a = Run.objects.create(project=team.a, name="ppo", config={}, seed_group="g")
    run_b = Run.objects.create(project=team.b, name="ppo", config={}, seed_group="g")
    doc = comment(team.client("rev"), "Entropy collapses at iteration 40.", kind="run", id=run_a.pk).json()
    assert doc["target"] == {"kind": "run", "id": str(run_a.pk), "trace": None} and doc["link"] == f"/runs/{run_a.pk}/"
    assert comment(team.client("rev"), "x", kind="run", id=run_b.pk).status_code == 404
    listed = team.client("vic").get(COMMENTS, {"kind": "run", "id": run_a.pk}).json()["results"]
    assert [c["id"] for c in listed] == [doc["id"]]
    run_a.delete()
    assert not Comment.objects.exists() and not Activity.objects.filter(target_kind="run").exists()


def test_project_review_page_shows_kappa_and_activity(team, client, fixtures):
    second = ingest(team.a, fixtures / "native_small.json", source_id="second")
    for name, rows in {"rev": [("adder", "e5"), ("checker", "e7")], "bob": [("adder", "e5"), ("adder", "e7")]}.items():
        for trace, (agent, event_id) in zip([team.trace_a, second], rows):
            post(
                team.client(name),
                f"/api/review/traces/{trace.pk}/mistake-labels/",
                {"agent": agent, "event_id": event_id},
                "put",
            )
    client.force_login(team.users["vic"])
    page = re.sub(r">\s+<", "><", client.get(f"/projects/{team.a.pk}/review/").content.decode())
    # Agents: rev = adder checker, bob = adder adder: p_o = 1/2, p_e = (1/2)(1) + (1/2)(0) = 1/2, κ = 0.
    # Steps: identical (e5, e7): p_o = 1, p_e = 1/2, κ = 1.
    assert "<td>bob · rev</td><td>2</td><td>0.50</td><td>0.00</td><td>1.00</td><td>1.00</td>" in page
    assert "labelled the mistake" in page and f"/traces/{second.pk}/" in page
    client.force_login(team.users["zed"])
    assert client.get(f"/projects/{team.a.pk}/review/").status_code == 404


def test_members_for_mention_completion_are_the_projects_own(team):
    team.users["bob"].first_name, team.users["bob"].last_name = "Bob", "Builder"
    team.users["bob"].save()
    team.users["vic"].is_active = False  # a deactivated member is never notified: not offered
    team.users["vic"].save()
    url = f"/api/review/projects/{team.a.pk}/members/"
    response = team.client("vic").get(url)  # reading needs membership, the viewer role is enough ...
    assert response.status_code == 401  # ... but vic is deactivated now: his token no longer works
    doc = team.client("rev").get(url).json()
    assert doc == {
        "project": team.a.pk,
        "members": [
            {"username": "ann", "name": ""},
            {"username": "bob", "name": "Bob Builder"},
            {"username": "rev", "name": ""},
        ],
    }
    # Every member offered is one a comment can mention: the names round-trip through the parser.
    body = " ".join(f"@{m['username']}" for m in doc["members"])
    posted = comment(team.client("rev"), body, kind="trace", id=team.trace_a.pk).json()
    assert sorted(posted["mentions"]) == ["ann", "bob", "rev"]
    # Another project's members are not listed to an outsider (404, as for any foreign object).
    assert team.client("zed").get(url).status_code == 404
    assert [
        m["username"] for m in team.client("zed").get(f"/api/review/projects/{team.b.pk}/members/").json()["members"]
    ] == ["zed"]
