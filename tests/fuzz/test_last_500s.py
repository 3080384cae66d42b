"""Inputs that once answered 500 (issue 33, "500s left") answer 4xx and store nothing. Every test
here touches the database, so CI runs this file again on PostgreSQL (the `services` marker)."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from webapp.traces.models import Trace

pytestmark = [pytest.mark.django_db, pytest.mark.services]

#: 10**400: a JSON integer that Python reads exactly but no float can hold.
HUGE = "1" + "0" * 400


def post_raw(client, path: str, body: str, **extra):
    return client.post(path, data=body.encode(), content_type="application/json", **extra)


@pytest.fixture
def trace_id(api_client) -> int:
    event = {"id": "e1", "t": 0, "type": "message", "agent": "a"}
    body = json.dumps({"name": "numbers", "events": [event], "rewards": {"team": 1}})
    response = api_client.post("/api/traces/", body, content_type="application/json")
    assert response.status_code == 201
    return response.json()["trace"]["id"]


@pytest.mark.parametrize("field", ["rewards", "costs", "metrics"])
def test_a_401_digit_number_in_a_batch_is_refused_naming_the_field(api_client, trace_id, field):
    before = Trace.objects.values(field).get(pk=trace_id)
    response = post_raw(api_client, f"/api/traces/{trace_id}/events/", f'{{"{field}": {{"score": {HUGE}}}}}')
    assert response.status_code == 400, response.content[:300]
    assert field in response.json()["error"] + json.dumps(response.json()), response.json()
    assert Trace.objects.values(field).get(pk=trace_id) == before
    # The trace's survey export still answers (nothing out of range was stored).
    assert api_client.get(f"/api/traces/{trace_id}/export/?format=survey").status_code == 200


@pytest.mark.parametrize("field", ["rewards", "costs", "metrics"])
def test_a_401_digit_number_in_a_trace_file_is_refused_naming_the_field(api_client, field):
    doc = (
        '{"format": "swarmscope", "version": 1, "name": "huge", '
        '"events": [{"id": "e1", "t": 0, "type": "message", "agent": "a"}], '
        f'"{field}": {{"score": {HUGE}}}}}'
    )
    count = Trace.objects.count()
    upload = SimpleUploadedFile("huge.json", doc.encode(), content_type="application/json")
    response = api_client.post("/api/traces/upload/", {"file": upload})
    assert 400 <= response.status_code < 500, response.content[:300]
    assert field in json.dumps(response.json()), response.json()
    assert Trace.objects.count() == count


def test_a_malformed_multipart_body_is_a_400(api_client):
    body = b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.json"\r\n\r\n{}'  # no end
    response = api_client.generic("POST", "/api/traces/upload/", body, content_type="multipart/form-data; boundary=xyz")
    assert response.status_code == 400, response.content[:300]
    body = b"not multipart at all"
    response = api_client.generic("POST", "/api/traces/upload/", body, content_type="multipart/form-data")
    assert response.status_code == 400, response.content[:300]


@pytest.fixture
def page_client(client, member):
    client.force_login(member)
    return client


@pytest.mark.parametrize(
    "path, statuses",
    [
        # "²": a digit to str.isdigit, not to int(); a project filter that names no possible project
        # is a 400 naming the field (the list's other malformed filters are dropped)
        ("/?project=%C2%B2", (400,)),
        (f"/?project={10**30}", (400,)),
        (f"/projects/{10**30}/members/", (404,)),
        (f"/projects/{10**30}/review/", (404,)),
        (f"/projects/{2**63}/settings/", (404,)),
        ("/sessions/%00/", (400, 404)),
        ("/sessions/a%00b/", (400, 404)),
    ],
)
def test_odd_page_urls_answer_400_or_404(page_client, path, statuses):
    response = page_client.get(path)
    assert response.status_code in statuses, (path, response.status_code)
    if path.startswith("/?project="):
        assert "project: " in response.content.decode() and "is not a project id" in response.content.decode()


def test_a_401_digit_reward_when_creating_a_trace_is_refused_naming_the_field(api_client):
    count = Trace.objects.count()
    response = post_raw(api_client, "/api/traces/", f'{{"name": "huge", "rewards": {{"team": {HUGE}}}}}')
    assert response.status_code == 400, response.content[:300]
    assert response.json()["field"] == "rewards.team"
    assert "float range" in response.json()["error"]
    assert Trace.objects.count() == count


def test_marking_a_notification_past_64_bits_read_is_a_400(api_client):
    """Found by schemathesis once the route was documented: SQLite could not compare the id."""
    response = post_raw(api_client, "/api/review/notifications/read/", f'{{"ids": [{10**30}]}}')
    assert response.status_code == 400 and response.json()["field"] == "ids"


def test_a_401_digit_reward_in_the_attributes_is_left_out(api_client):
    """`attributes.rewards` (streamed SwarmSim episodes) gives the rewards when `rewards` is absent:
    a number no float holds is not one of them (the attributes keep it as sent)."""
    body = f'{{"name": "attrs", "attributes": {{"rewards": {{"team": 0.5, "huge": {HUGE}}}}}}}'
    response = post_raw(api_client, "/api/traces/", body)
    assert response.status_code == 201, response.content[:300]
    assert Trace.objects.get(pk=response.json()["trace"]["id"]).rewards == {"team": 0.5}


def test_the_survey_export_of_a_trace_without_events_is_a_400_naming_the_format(api_client):
    created = post_raw(api_client, "/api/traces/", '{"name": "empty"}')
    trace_id = created.json()["trace"]["id"]
    response = api_client.get(f"/api/traces/{trace_id}/export/?format=survey")
    assert response.status_code == 400 and response.json()["field"] == "format", response.content[:300]
    assert api_client.get(f"/api/traces/{trace_id}/export/?format=native").status_code == 200


def test_a_401_digit_score_in_a_trace_file_is_not_made_the_reward(api_client):
    doc = (
        '{"format": "swarmscope", "version": 1, "name": "scored", '
        '"events": [{"id": "e1", "t": 0, "type": "message", "agent": "a"}], '
        f'"attributes": {{"score_values": {{"reward": {HUGE}}}}}}}'
    )
    upload = SimpleUploadedFile("scored.json", doc.encode(), content_type="application/json")
    response = api_client.post("/api/traces/upload/", {"file": upload})
    assert response.status_code < 500, response.content[:300]
    for trace in Trace.objects.all():
        assert "reward" not in trace.rewards


@pytest.mark.parametrize("path", [f"/projects/{10**30}/members/", "/sessions/%00/"])
def test_odd_page_urls_get_the_friendly_404_with_debug_on(page_client, settings, path):
    settings.DEBUG = True  # the local default: Django's technical page must not answer instead
    response = page_client.get(path)
    assert response.status_code == 404
    assert 'data-testid="error-page"' in response.content.decode() and "URLconf" not in response.content.decode()
