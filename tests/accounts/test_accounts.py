"""Sign-up by invitation, password reset, the members page, and the API tokens page."""

import re

import pytest
from django.core import mail

from webapp.accounts.models import ApiToken, Invitation, Membership
from webapp.accounts.services import do_create_invitation

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def test_admin_invites_and_the_invitee_signs_up(team, client):
    client.force_login(team.users["ann"])
    response = client.post(
        f"/projects/{team.a.pk}/members/",
        {"action": "invite", "role": "reviewer", "email": "eve@example.org"},
        follow=True,
    )
    link = re.search(r"http://testserver(/accounts/invite/[^/]+/)", response.content.decode()).group(1)
    assert Invitation.objects.get().key_hash not in link  # only the hash is stored
    client.logout()
    # The key moves into the session; the address bar shows /accounts/invite/accept/.
    first = client.get(link)
    assert first.status_code == 302 and first["Location"] == "/accounts/invite/accept/"
    page = client.get("/accounts/invite/accept/")
    assert "Join Project A as reviewer" in page.content.decode()
    bad = client.post("/accounts/invite/accept/", {"username": "eve", "password1": "x", "password2": "y"})
    assert bad.status_code == 200 and not Membership.objects.filter(user__username="eve").exists()
    done = client.post(
        "/accounts/invite/accept/", {"username": "eve", "password1": "a-long-passw0rd", "password2": "a-long-passw0rd"}
    )
    assert done.status_code == 302
    membership = Membership.objects.get(user__username="eve")
    assert (membership.project, membership.role, membership.user.email) == (team.a, "reviewer", "eve@example.org")
    assert client.get("/").status_code == 200  # logged in
    # Used once: the link no longer works.
    client.logout()
    client.get(link)
    assert client.get("/accounts/invite/accept/").status_code == 404


def test_expired_or_unknown_invitations_do_not_work(team, client):
    invitation, raw = do_create_invitation(team.a, "viewer", team.users["ann"])
    Invitation.objects.filter(pk=invitation.pk).update(expires_at="2000-01-01T00:00Z")
    for key in (raw, "guessed-key"):
        client.get(f"/accounts/invite/{key}/")
        assert client.get("/accounts/invite/accept/").status_code == 404


def test_logged_in_user_joins_with_an_invitation(team, client):
    _, raw = do_create_invitation(team.b, "viewer", team.users["zed"])
    client.force_login(team.users["vic"])
    client.get(f"/accounts/invite/{raw}/")
    assert client.post("/accounts/invite/accept/").status_code == 302
    assert Membership.objects.get(user=team.users["vic"], project=team.b).role == "viewer"


def test_password_reset_by_e_mail(team, client):
    user = team.users["rev"]
    user.email = "rev@example.org"
    user.save()
    assert client.post("/accounts/password_reset/", {"email": "rev@example.org"}).status_code == 302
    (message,) = mail.outbox
    url = re.search(r"http://testserver(/accounts/reset/\S+/)", message.body).group(1)
    set_page = client.get(url, follow=True)
    assert "Choose a new password" in set_page.content.decode()
    final = client.post(
        set_page.redirect_chain[-1][0], {"new_password1": "brand-new-passw0rd", "new_password2": "brand-new-passw0rd"}
    )
    assert final.status_code == 302
    assert client.login(username="rev", password="brand-new-passw0rd")


def test_members_page_roles_and_removal(team, client):
    client.force_login(team.users["vic"])
    page = client.get(f"/projects/{team.a.pk}/members/").content.decode()
    assert "ann" in page and "Create invitation link" not in page
    vic_membership = Membership.objects.get(user=team.users["vic"])
    assert (
        client.post(
            f"/projects/{team.a.pk}/members/", {"action": "role", "membership": vic_membership.pk, "role": "admin"}
        ).status_code
        == 403
    )
    client.force_login(team.users["ann"])
    client.post(
        f"/projects/{team.a.pk}/members/", {"action": "role", "membership": vic_membership.pk, "role": "reviewer"}
    )
    assert Membership.objects.get(pk=vic_membership.pk).role == "reviewer"
    # The last admin cannot step down or be removed.
    ann_membership = Membership.objects.get(user=team.users["ann"])
    response = client.post(
        f"/projects/{team.a.pk}/members/", {"action": "remove", "membership": ann_membership.pk}, follow=True
    )
    assert "at least one admin" in response.content.decode()
    assert Membership.objects.filter(pk=ann_membership.pk).exists()
    # Removing a member revokes their tokens for the project at once.
    rev_membership = Membership.objects.get(user=team.users["rev"])
    client.post(f"/projects/{team.a.pk}/members/", {"action": "remove", "membership": rev_membership.pk})
    assert not Membership.objects.filter(pk=rev_membership.pk).exists()
    assert team.client("rev").get(f"/api/traces/{team.trace_a.pk}/").status_code == 401


def test_tokens_page_shows_last_use(team, client):
    team.client("rev").get("/api/traces/")
    client.force_login(team.users["rev"])
    page = client.get("/tokens/").content.decode()
    token = ApiToken.objects.get(user=team.users["rev"])
    assert token.last_used_at is not None
    assert token.last_used_at.strftime("%Y-%m-%d %H:%M") in page


def test_members_page_refuses_bad_input_cleanly(team, client):
    client.force_login(team.users["ann"])
    for data in (
        {"action": "role", "membership": "abc", "role": "admin"},
        {"action": "remove", "membership": ""},
        {"action": "cancel", "invitation": "x"},
    ):
        assert client.post(f"/projects/{team.a.pk}/members/", data).status_code in (302, 404)
    response = client.post(f"/projects/{team.a.pk}/members/", {"action": "invite", "role": "owner"}, follow=True)
    assert "unknown role" in response.content.decode() and not team.a.invitations.exists()


def test_any_member_creates_a_project_and_becomes_its_admin(team):
    from django.test import Client

    from webapp.accounts.models import Project

    vic = Client()
    vic.force_login(team.users["vic"])  # a viewer in project A
    response = vic.post("/projects/", {"name": "  Vic's lab  "})
    project = Project.objects.get(name="Vic's lab")
    assert response.status_code == 302 and response["Location"] == f"/projects/{project.pk}/members/"
    assert Membership.objects.get(project=project, user=team.users["vic"]).role == "admin"
    assert "Vic&#x27;s lab" in vic.get("/projects/").content.decode()
    again = vic.post("/projects/", {"name": "vic's LAB"})  # names are unique ignoring case
    assert again.status_code == 400 and "exists already" in again.content.decode()
    assert vic.post("/projects/", {"name": "   "}).status_code == 400
    assert Project.objects.filter(name__iexact="vic's lab").count() == 1
    zed = Client()
    zed.force_login(team.users["zed"])
    assert "Vic&#x27;s lab" not in zed.get("/projects/").content.decode()
    assert zed.get(f"/projects/{project.pk}/members/").status_code == 404


def test_the_projects_page_counts_members_in_the_singular_and_plural(team):
    from django.test import Client

    zed, ann = Client(), Client()
    zed.force_login(team.users["zed"])  # project B: zed alone
    ann.force_login(team.users["ann"])  # project A: ann, rev, bob, vic
    assert "1 member</a>" in zed.get("/projects/").content.decode()
    assert "4 members</a>" in ann.get("/projects/").content.decode()


def test_the_projects_page_counts_the_traces_its_link_lists_and_the_derived_ones_apart(team):
    from django.test import Client

    from webapp.traces.models import Trace

    for i, kind in enumerate(("branch", "branch", "episode")):
        Trace.objects.create(
            project=team.a, identity_key=f"sim:d{i}", source_format="sim", source_id=f"d{i}", kind=kind
        )
    ann = Client()
    ann.force_login(team.users["ann"])  # project A: the native fixture (imported), two branches, an episode
    page = ann.get("/projects/").content.decode()
    link = re.search(r'<a href="/\?project=(\d+)" data-testid="project-traces">(\d+) traces?</a>', page)
    assert link and int(link[1]) == team.a.pk and link[2] == "1" and "1 trace</a>" in page
    assert "(+3 branches/episodes)</a>" in page
    listed = ann.get(f"/?project={team.a.pk}").content.decode()
    assert '<span data-testid="trace-count" data-number="1">1</span>' in listed
    derived = re.search(r'<a href="/\?([^"]+)" class="muted" data-testid="project-derived-traces"', page)
    shown = ann.get("/?" + derived[1].replace("&amp;", "&")).content.decode()
    assert '<span data-testid="trace-count" data-number="3">3</span>' in shown
