"""Every JSON endpoint reads its body through `webapp.web.api.json_body`: unreadable, too deeply
nested or NUL-holding bodies answer 400 naming the field, never 500."""

import json

import pytest

from tests.review.conftest import ingest

pytestmark = pytest.mark.django_db

DEEP = ("[" * 100_000 + "]" * 100_000).encode()


@pytest.fixture
def trace(project, fixtures):
    return ingest(project, fixtures / "native_small.json")


def endpoints(trace):
    return [
        "/api/traces/",
        f"/api/traces/{trace.pk}/events/",
        "/api/runs/",
        f"/api/traces/{trace.pk}/counterfactuals/",
        f"/api/traces/{trace.pk}/counterfactuals/estimate/",
        f"/api/traces/{trace.pk}/attributions/run/",
        "/api/review/comments/",
    ]


@pytest.mark.parametrize(
    "body, field",
    [
        (DEEP, "body"),
        (b'{"name": "x', "body"),
        (b"\xff\xfe", "body"),
        (json.dumps({"name": "a\x00b"}).encode(), "name"),
    ],
    ids=["nested-too-deeply", "truncated", "not-utf8", "nul-in-a-field"],
)
def test_bad_bodies_answer_400_naming_the_field(api_client, trace, body, field):
    for url in endpoints(trace):
        answer = api_client.post(url, data=body, content_type="application/json")
        assert answer.status_code == 400, (url, answer.status_code, answer.content[:200])
        doc = answer.json()
        assert doc["error"], url
        if url.startswith(("/api/runs/", f"/api/traces/{trace.pk}/c", f"/api/traces/{trace.pk}/a", "/api/review/")):
            assert doc.get("field") == field, (url, doc)
