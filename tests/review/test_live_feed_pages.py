"""The pages that show review activity and follow it live (static/js/pages/activity_feed.js): the
project's review page hands its list the newest activity id it rendered (the socket sends what
came after), older pages stay still; the projects page hands its recent-activity list each of the
user's projects (the socket's snapshot fills it). The live items read as the server-rendered ones."""

from __future__ import annotations

import html
import json
import re

import pytest
from django.test import Client

from tests.servers import REPO
from webapp.review import views
from webapp.review.models import Activity

pytestmark = pytest.mark.django_db


def comment(team, name, body):
    response = team.client(name).post(
        "/api/review/comments/",
        data=json.dumps({"kind": "trace", "id": team.trace_a.pk, "body": body}),
        content_type="application/json",
    )
    assert response.status_code == 201, response.content


def session(team, name) -> Client:
    client = Client()
    client.force_login(team.users[name])
    return client


def feed_projects(page_html: str, testid: str) -> list[dict] | None:
    """The `data-projects` of the feed list `testid`, None when the list has none."""
    tag = re.search(rf'<ol[^>]*data-testid="{testid}"[^>]*>', page_html, re.S)
    assert tag, f"no {testid} list"
    found = re.search(r'data-projects="([^"]*)"', tag.group(0))
    return json.loads(html.unescape(found.group(1))) if found else None


def test_the_review_page_follows_the_feed_from_its_newest_activity(team):
    comment(team, "rev", "first")
    comment(team, "bob", "second")
    newest = Activity.objects.filter(project=team.a).order_by("-id").first()
    page = session(team, "ann").get(f"/projects/{team.a.pk}/review/").content.decode()
    assert feed_projects(page, "activity") == [{"project": team.a.pk, "name": team.a.name, "seq": newest.pk}]
    assert f'data-activity-id="{newest.pk}"' in page  # server items carry their ids: a live one never repeats
    assert "js/pages/activity_feed.js" in page

    older = session(team, "ann").get(f"/projects/{team.a.pk}/review/?before={newest.pk}").content.decode()
    assert feed_projects(older, "activity") is None and "activity_feed.js" not in older


def test_an_empty_feed_has_its_list_ready_for_the_first_activity(team):
    page = session(team, "zed").get(f"/projects/{team.b.pk}/review/").content.decode()
    assert feed_projects(page, "activity") == [{"project": team.b.pk, "name": team.b.name, "seq": 0}]
    assert "No review activity yet." in page


def test_the_feed_reads_its_dates_and_statuses_as_words(team):
    response = team.client("rev").put(
        f"/api/review/traces/{team.trace_a.pk}/status/",
        data=json.dumps({"status": "in_review"}),
        content_type="application/json",
    )
    assert response.status_code == 200, response.content
    activity = Activity.objects.get(project=team.a, verb="set_status")
    page = session(team, "ann").get(f"/projects/{team.a.pk}/review/").content.decode()
    item = re.search(rf'<li data-activity-id="{activity.pk}">(.*?)</li>', page, re.S).group(1)
    assert f"{activity.created_at:%Y-%m-%d %H:%M}</time>" in item  # a space between date and time
    assert ": In review" in item and "in_review" not in item


def test_the_projects_page_hands_its_feed_every_project_of_the_user(team):
    page = session(team, "ann").get("/projects/").content.decode()
    assert feed_projects(page, "recent-activity") == [{"project": team.a.pk, "name": team.a.name, "seq": None}]
    other = session(team, "zed").get("/projects/").content.decode()
    assert [p["project"] for p in feed_projects(other, "recent-activity")] == [team.b.pk]


def test_live_items_read_as_the_server_rendered_ones():
    source = (REPO / "static" / "js" / "lib" / "activity_feed.js").read_text()
    block = source.split("export const VERB_TEXT = Object.freeze({", 1)[1].split("});", 1)[0]
    in_js = dict(re.findall(r'(\w+): "([^"]+)"', block))
    assert in_js == views.VERB_TEXT
    block = source.split("export const STATUS_TEXT = Object.freeze({", 1)[1].split("});", 1)[0]
    assert dict(re.findall(r'(\w+): "([^"]+)"', block)) == views.STATUS_TEXT
