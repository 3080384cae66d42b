"""@mentions in review comments: an in-app notification per mentioned member (never a non-member,
an unknown name or the author), the header's bell and the notifications page, mark read, and the
e-mail sent through django.core.mail where a delivering backend is configured (locmem here)."""

import json

import pytest
from django.core import mail
from django.test import Client, override_settings

from webapp.review.models import Notification

pytestmark = [pytest.mark.django_db, pytest.mark.services]

COMMENTS = "/api/review/comments/"
NOTIFICATIONS = "/api/review/notifications/"


def comment(client, body, **target):
    return client.post(COMMENTS, data=json.dumps({"body": body, **target}), content_type="application/json")


def browser(team, name):
    client = Client()
    client.force_login(team.users[name])
    return client


def test_a_mention_notifies_members_only_once_each(team, django_capture_on_commit_callbacks):
    for name in ("bob", "zed", "rev"):
        team.users[name].email = f"{name}@example.org"
        team.users[name].save()
    with django_capture_on_commit_callbacks(execute=True):
        response = comment(
            team.client("rev"), "@bob @zed @nobody @rev look at e5", kind="attribution", id=team.attribution_a.pk
        )
    assert response.status_code == 201, response.content
    # bob is a member of project A; zed is in project B only, nobody does not exist, rev wrote it.
    assert list(Notification.objects.values_list("user__username", flat=True)) == ["bob"]
    assert [m.to for m in mail.outbox] == [["bob@example.org"]]
    assert "rev mentioned you" in mail.outbox[0].subject
    assert f"/traces/{team.trace_a.pk}/?attribution={team.attribution_a.pk}" in mail.outbox[0].body

    doc = team.client("bob").get(NOTIFICATIONS).json()
    assert doc["unread"] == 1
    (note,) = doc["results"]
    assert note["actor"] == "rev" and note["read"] is False
    assert note["link"] == f"/traces/{team.trace_a.pk}/?attribution={team.attribution_a.pk}"
    assert note["excerpt"].startswith("@bob @zed")
    for name in ("zed", "rev", "vic"):
        assert team.client(name).get(NOTIFICATIONS).json() == {"unread": 0, "results": []}

    # Editing keeps bob mentioned: no second notification, no second e-mail; a new name is notified.
    url = f"{COMMENTS}{response.json()['id']}/"
    with django_capture_on_commit_callbacks(execute=True):
        edited = team.client("rev").patch(
            url, data=json.dumps({"body": "@bob and @ann, e5 again"}), content_type="application/json"
        )
    assert edited.status_code == 200
    assert sorted(Notification.objects.values_list("user__username", flat=True)) == ["ann", "bob"]
    assert len(mail.outbox) == 1  # ann has no e-mail address


def test_mark_read_one_or_all_and_never_someone_elses(team):
    rev = team.client("rev")
    for i in range(3):
        comment(rev, f"@bob note {i}", kind="trace", id=team.trace_a.pk)
    comment(rev, "@ann note", kind="trace", id=team.trace_a.pk)
    bob = team.client("bob")
    ids = [n["id"] for n in bob.get(NOTIFICATIONS).json()["results"]]
    assert len(ids) == 3
    ann_id = Notification.objects.get(user=team.users["ann"]).pk
    read = "/api/review/notifications/read/"
    marked = bob.post(read, data=json.dumps({"ids": [ids[0], ann_id]}), content_type="application/json").json()
    assert marked == {"marked": 1, "unread": 2}
    assert Notification.objects.get(pk=ann_id).read_at is None
    bad = bob.post(read, data=json.dumps({"ids": "all"}), content_type="application/json")
    assert bad.status_code == 400 and bad.json()["field"] == "ids"
    assert bob.post(read, data="{}", content_type="application/json").json() == {"marked": 2, "unread": 0}
    assert bob.get(NOTIFICATIONS, {"unread": "1"}).json()["results"] == []


def test_bell_and_notifications_page(team):
    comment(team.client("rev"), "@bob is e5 the mistake?", kind="event", trace=team.trace_a.pk, id="e5")
    bob = browser(team, "bob")
    page = bob.get("/notifications/").content.decode()
    assert 'data-testid="notification-count">1<' in page
    assert f'href="/traces/{team.trace_a.pk}/?event=e5"' in page and "is e5 the mistake?" in page
    created = Notification.objects.get(user=team.users["bob"]).created_at
    assert f"{created:%Y-%m-%d %H:%M}</time>" in page  # a space between date and time
    # The bell is in every page's header; vic was not mentioned.
    assert 'data-testid="notification-count">1<' in bob.get("/").content.decode()
    vic_page = browser(team, "vic").get("/").content.decode()
    assert 'data-testid="notification-bell"' in vic_page and "notification-count" not in vic_page
    note = Notification.objects.get(user=team.users["bob"])
    opened = bob.post("/notifications/", {"id": note.pk, "open": "1"})
    assert opened.status_code == 302 and opened["Location"] == f"/traces/{team.trace_a.pk}/?event=e5"
    note.refresh_from_db()
    assert note.read_at is not None
    assert "notification-count" not in bob.get("/notifications/").content.decode()


def test_the_notifications_page_shows_the_comment_as_text_not_its_markdown_or_tags(team):
    body = "Looks like **WebSurfer** flipped the sign, @bob: see `e5` <script>alert(1)</script> [here](https://x.test/)"
    comment(team.client("rev"), body, kind="event", trace=team.trace_a.pk, id="e5")
    page = browser(team, "bob").get("/notifications/").content.decode()
    excerpt = page.split('data-testid="notification"')[1].split("</q>")[0].split("<q>")[1]
    assert excerpt == "Looks like WebSurfer flipped the sign, @bob: see e5 here"


@override_settings(EMAIL_BACKEND="django.core.mail.backends.console.EmailBackend")
def test_no_mail_without_a_delivering_backend(team, django_capture_on_commit_callbacks, capsys):
    team.users["bob"].email = "bob@example.org"
    team.users["bob"].save()
    with django_capture_on_commit_callbacks(execute=True):
        comment(team.client("rev"), "@bob", kind="trace", id=team.trace_a.pk)
    assert Notification.objects.filter(user=team.users["bob"], emailed_at__isnull=True).count() == 1
    assert "bob@example.org" not in capsys.readouterr().out
