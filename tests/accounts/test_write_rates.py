"""Write rates by the project written to (issue 33): a session counts against the project it writes
into, not its first one; counterfactual and attribution jobs count their samples; comments count
one each and one more per @mention. Over a rate: 429 naming the setting, nothing written."""

import json

import pytest
from django.core.cache import cache

from webapp.accounts.services import do_add_member
from webapp.review.models import Comment

pytestmark = [pytest.mark.django_db, pytest.mark.services]

BATCH = {"events": [{"id": "r1", "t": 0.0, "type": "message", "agent": "orchestrator", "content": "hello"}]}


@pytest.fixture(autouse=True)
def fresh_counters():
    cache.clear()  # rate counters of earlier tests
    yield
    cache.clear()


def post(client, url, body):
    return client.post(url, data=json.dumps(body), content_type="application/json")


def test_a_session_counts_against_the_project_it_writes_into(team, settings, client):
    settings.SWARMSCOPE_INGEST_RATE, settings.SWARMSCOPE_INGEST_RATE_PROJECT = 100, 2
    do_add_member(team.b, team.users["rev"], "reviewer")  # rev: Project A (her first) and Project B
    zed = team.client("zed")
    assert [post(zed, f"/api/traces/{team.trace_b.pk}/events/", BATCH).status_code for _ in range(2)] == [200, 200]
    client.force_login(team.users["rev"])
    refused = post(client, f"/api/traces/{team.trace_b.pk}/events/", BATCH)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert "for this project (SWARMSCOPE_INGEST_RATE_PROJECT)" in refused.json()["error"]
    assert post(client, f"/api/traces/{team.trace_a.pk}/events/", BATCH).status_code == 200  # A has room


def test_comments_count_their_mentions(team, settings):
    settings.SWARMSCOPE_COMMENT_RATE, settings.SWARMSCOPE_COMMENT_RATE_PROJECT = 4, 100
    rev = team.client("rev")
    target = {"kind": "trace", "id": team.trace_a.pk}
    assert post(rev, "/api/review/comments/", {"body": "see @bob and @ann", **target}).status_code == 201  # 3
    assert post(rev, "/api/review/comments/", {"body": "one more", **target}).status_code == 201  # 4
    refused = post(rev, "/api/review/comments/", {"body": "and @bob again", **target})
    assert refused.status_code == 429 and "SWARMSCOPE_COMMENT_RATE" in refused.json()["error"]
    assert "comments and mentions" in refused.json()["error"]
    assert Comment.objects.filter(body="and @bob again").count() == 0  # nothing stored, nobody notified
    assert post(team.client("bob"), "/api/review/comments/", {"body": "mine", **target}).status_code == 201
