"""Roles and limits (issue 18 item 10): accepting an invitation never lowers a role, ingestion is
limited per user and per project (tokens and session alike), failed logins are throttled."""

import json

import pytest
from django.core.cache import cache

from webapp.accounts import ratelimit
from webapp.accounts.models import Membership
from webapp.accounts.services import do_accept_invitation, do_create_invitation, do_create_token
from webapp.traces.models import Trace

pytestmark = pytest.mark.django_db

BATCH = [{"id": "r1", "t": 0.0, "type": "message", "agent": "orchestrator", "content": "hello"}]


@pytest.fixture(autouse=True)
def fresh_counters():
    cache.clear()  # rate and login counters of earlier tests
    yield
    cache.clear()


def role(team, name, project):
    return Membership.objects.get(user=team.users[name], project=project).role


# --- invitations ---------------------------------------------------------------------------------


def test_the_only_admin_accepting_a_viewer_invitation_stays_admin(team, client):
    assert list(Membership.objects.filter(project=team.a, role="admin").values_list("user__username", flat=True)) == [
        "ann"
    ]
    _, raw = do_create_invitation(team.a, "viewer", team.users["ann"])
    client.force_login(team.users["ann"])
    client.get(f"/accounts/invite/{raw}/")
    assert client.post("/accounts/invite/accept/").status_code == 302
    assert role(team, "ann", team.a) == "admin"
    # a reviewer accepting a viewer invitation stays a reviewer too
    invitation, _ = do_create_invitation(team.a, "viewer", team.users["ann"])
    do_accept_invitation(invitation, team.users["rev"])
    assert role(team, "rev", team.a) == "reviewer"


def test_a_viewer_accepting_an_admin_invitation_becomes_admin(team):
    invitation, _ = do_create_invitation(team.a, "admin", team.users["ann"])
    assert do_accept_invitation(invitation, team.users["vic"]).role == "admin"
    assert role(team, "vic", team.a) == "admin"
    invitation, _ = do_create_invitation(team.a, "reviewer", team.users["ann"])
    do_accept_invitation(invitation, team.users["vic"])
    assert role(team, "vic", team.a) == "admin"


# --- ingestion rate ------------------------------------------------------------------------------


def post_batch(client, team, **extra):
    url = f"/api/traces/{team.trace_a.pk}/events/"
    return client.post(url, data=json.dumps(BATCH), content_type="application/json", **extra)


def test_two_tokens_of_one_user_share_the_limit(team, settings):
    settings.SWARMSCOPE_INGEST_RATE, settings.SWARMSCOPE_INGEST_RATE_PROJECT = 3, 100
    second = do_create_token(team.users["rev"], team.a, "second")[1]
    first = team.client("rev")
    codes = [post_batch(first, team).status_code for _ in range(2)]
    codes.append(post_batch(first, team, HTTP_AUTHORIZATION=f"Bearer {second}").status_code)
    refused = post_batch(first, team, HTTP_AUTHORIZATION=f"Bearer {second}")
    assert codes == [200, 200, 200] and refused.status_code == 429
    assert "for this user" in refused.json()["error"] and int(refused["Retry-After"]) >= 1
    assert post_batch(team.client("bob"), team).status_code == 200  # another user of the project


def test_session_ingestion_counts_against_the_user(team, settings, client):
    settings.SWARMSCOPE_INGEST_RATE, settings.SWARMSCOPE_INGEST_RATE_PROJECT = 3, 100
    client.force_login(team.users["rev"])
    assert [post_batch(client, team).status_code for _ in range(3)] == [200, 200, 200]
    refused = post_batch(client, team)
    assert refused.status_code == 429 and "for this user" in refused.json()["error"]
    assert post_batch(team.client("rev"), team).status_code == 429  # the token shares the session's count
    assert client.get(f"/api/traces/{team.trace_a.pk}/").status_code == 200  # reads are not counted


def test_two_users_of_one_project_hit_the_project_limit(team, settings):
    settings.SWARMSCOPE_INGEST_RATE, settings.SWARMSCOPE_INGEST_RATE_PROJECT = 3, 4
    rev, bob = team.client("rev"), team.client("bob")
    # rev's two requests over the user limit are refused without using up the project's share
    assert [post_batch(rev, team).status_code for _ in range(5)] == [200, 200, 200, 429, 429]
    assert post_batch(bob, team).status_code == 200
    refused = post_batch(bob, team)
    assert refused.status_code == 429 and "for this project" in refused.json()["error"]
    assert "SWARMSCOPE_INGEST_RATE_PROJECT" in refused.json()["error"]
    other = team.client("zed").post("/api/traces/", data=json.dumps({"name": "b"}), content_type="application/json")
    assert other.status_code == 201  # another project is not limited


def test_the_upload_page_counts_against_the_same_limit(team, settings, client, fixtures):
    settings.SWARMSCOPE_INGEST_RATE, settings.SWARMSCOPE_INGEST_RATE_PROJECT = 2, 100
    client.force_login(team.users["rev"])
    assert post_batch(client, team).status_code == 200
    before = Trace.objects.count()

    def upload():
        with open(fixtures / "survey_small.json", "rb") as f:
            return client.post("/upload/", {"file": [f]})

    assert upload().status_code == 200 and Trace.objects.count() == before + 1
    refused = upload()
    text = refused.content.decode()
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert "Upload refused: over the ingestion rate of 2 requests" in text and "Nothing was imported" in text
    assert "Traceback" not in text and Trace.objects.count() == before + 1
    assert post_batch(client, team).status_code == 429  # the API shares the count


def test_a_cache_that_is_down_lets_ingestion_through(settings, monkeypatch):
    settings.SWARMSCOPE_INGEST_RATE, settings.SWARMSCOPE_INGEST_RATE_PROJECT = 1, 1

    class DownCache:
        def add(self, *args, **kwargs):
            raise ConnectionError("redis is down")

    monkeypatch.setattr(ratelimit, "cache", DownCache())
    assert [ratelimit.check_ingest_rate(1, 1, now=10.0) for _ in range(3)] == [None, None, None]


def test_rate_windows_and_retry_after(settings):
    settings.SWARMSCOPE_INGEST_RATE, settings.SWARMSCOPE_INGEST_RATE_PROJECT = 1, 0
    settings.SWARMSCOPE_INGEST_RATE_WINDOW_S = 60
    assert ratelimit.check_ingest_rate(7, 1, now=600.0) is None
    refused = ratelimit.check_ingest_rate(7, 1, now=645.5)
    assert (refused.scope, refused.retry_after_s) == ("user", 15)  # window 600-660 s
    assert ratelimit.check_ingest_rate(7, 1, now=660.0) is None  # the next window


# --- failed logins -------------------------------------------------------------------------------


def log_in(client, username, password, address):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def test_failed_logins_are_throttled_per_user_name(team, client, settings):
    settings.SWARMSCOPE_LOGIN_FAILURES, settings.SWARMSCOPE_LOGIN_WINDOW_S = 10, 900
    for n in range(10):
        assert log_in(client, "ann", f"wrong-{n}", f"10.0.0.{n}").status_code == 200  # the form again
    refused = log_in(client, "ann", "ann-password-1", "10.0.1.1")  # the right one, from a fresh address
    assert refused.status_code == 429 and 840 <= int(refused["Retry-After"]) <= 900
    page = refused.content.decode()
    assert "Too many failed logins" in page and "Try again in 15 minute(s)" in page
    assert "_auth_user_id" not in client.session
    # the user name compared ignoring case; another user name from another address is unaffected
    assert log_in(client, "ANN", "ann-password-1", "10.0.1.2").status_code == 429
    assert log_in(client, "bob", "bob-password-1", "10.0.2.1").status_code == 302


def test_failed_logins_are_throttled_per_address(team, client, settings):
    settings.SWARMSCOPE_LOGIN_FAILURES, settings.SWARMSCOPE_LOGIN_ADDRESS_FAILURES = 10, 10
    settings.SWARMSCOPE_LOGIN_ADDRESS_DELAY_S = 300  # the address's delay outlasts the test
    for n in range(10):
        log_in(client, f"guess-{n}", "wrong", "10.9.9.9")
    assert log_in(client, "bob", "bob-password-1", "10.9.9.9").status_code == 429
    assert log_in(client, "bob", "bob-password-1", "10.9.9.8").status_code == 302


def test_wrong_passwords_by_others_at_a_shared_address_do_not_lock_a_user_out(team, client, settings):
    """Every local browser is 127.0.0.1: by default the address allows ten user names' worth of
    failures, so a user locked out for their own name leaves the others at that address free."""
    settings.SWARMSCOPE_LOGIN_FAILURES, settings.SWARMSCOPE_LOGIN_ADDRESS_FAILURES = 3, None
    settings.SWARMSCOPE_LOGIN_ADDRESS_DELAY_S = 300  # the address's delay outlasts the test
    for n in range(3):
        log_in(client, "ann", f"wrong-{n}", "127.0.0.1")
        log_in(client, f"typo-{n}", "wrong", "127.0.0.1")
    assert log_in(client, "ann", "ann-password-1", "127.0.0.1").status_code == 429  # her name is over
    assert log_in(client, "bob", "bob-password-1", "127.0.0.1").status_code == 302  # the address is not
    client.logout()
    for n in range(30 - 6):
        log_in(client, f"spray-{n}", "wrong", "127.0.0.1")
    assert log_in(client, "bob", "bob-password-1", "127.0.0.1").status_code == 429  # 30 = 10 x 3: now it is


def test_an_address_over_its_limit_is_delayed_not_locked(settings):
    """Past its limit an address waits a delay after its last failure (doubling, capped), not the
    window: the others behind it log in seconds later. Attempts during the delay are not counted."""
    from webapp.accounts.login_throttle import check_login_allowed, do_count_login_failure

    settings.SWARMSCOPE_LOGIN_FAILURES, settings.SWARMSCOPE_LOGIN_ADDRESS_FAILURES = 100, 3
    settings.SWARMSCOPE_LOGIN_ADDRESS_DELAY_S, settings.SWARMSCOPE_LOGIN_ADDRESS_DELAY_MAX_S = 2, 8
    settings.SWARMSCOPE_LOGIN_WINDOW_S = 900
    for i in range(3):
        do_count_login_failure(f"guess-{i}", "10.7.7.7", now=1000.0 + i)  # the third reaches the limit
    assert check_login_allowed("bob", "10.7.7.7", now=1002.5) == 2  # 2 s after the last failure
    assert check_login_allowed("bob", "10.7.7.7", now=1004.0) is None  # then free, long before the window ends
    do_count_login_failure("guess-3", "10.7.7.7", now=1003.0)  # during the delay: not counted
    do_count_login_failure("guess-4", "10.7.7.7", now=1005.0)  # counted: one over, 4 s
    assert check_login_allowed("bob", "10.7.7.7", now=1008.0) == 1
    for t in (1010.0, 1020.0, 1030.0, 1040.0):
        do_count_login_failure("guess", "10.7.7.7", now=t)
    assert check_login_allowed("bob", "10.7.7.7", now=1040.5) == 8  # at most SWARMSCOPE_LOGIN_ADDRESS_DELAY_MAX_S
    assert check_login_allowed("bob", "10.7.7.8", now=1040.5) is None  # another address


def test_a_successful_login_resets_the_user_names_count(team, client, settings):
    settings.SWARMSCOPE_LOGIN_FAILURES = 3
    for n in range(2):
        log_in(client, "ann", "wrong", f"10.1.0.{n}")
    assert log_in(client, "ann", "ann-password-1", "10.1.1.0").status_code == 302
    client.logout()
    for n in range(2):
        log_in(client, "ann", "wrong", f"10.2.0.{n}")
    assert log_in(client, "ann", "ann-password-1", "10.2.1.0").status_code == 302  # 2 since, not 4


def test_other_login_forms_are_refused_too(team, client, settings):
    """The throttle is also in the authentication backend: Django's own authenticate() (the admin's
    login form) refuses without checking the password."""
    from django.contrib.auth import authenticate

    settings.SWARMSCOPE_LOGIN_FAILURES = 2
    for _ in range(2):
        assert authenticate(None, username="ann", password="wrong") is None
    assert authenticate(None, username="ann", password="ann-password-1") is None
    assert authenticate(None, username="bob", password="bob-password-1") == team.users["bob"]
