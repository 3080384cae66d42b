"""GET /healthz in process: no login needed, JSON naming each check, 503 when one fails."""

import pytest
from django.db import DatabaseError

from webapp.config import health

pytestmark = [pytest.mark.django_db, pytest.mark.services]


def test_healthz_answers_without_login(client, settings):
    settings.REDIS_URL = ""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "checks": {"database": "ok", "redis": "not configured"}}
    assert client.post("/healthz").status_code == 405


def test_healthz_is_503_naming_the_failed_check(client, settings, monkeypatch):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1

    class BrokenCursor:
        def __enter__(self):
            raise DatabaseError("connection refused")

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(health.connection, "cursor", lambda: BrokenCursor())
    response = client.get("/healthz")
    body = response.json()
    assert response.status_code == 503 and body["status"] == "error"
    assert body["checks"]["database"] == "error: DatabaseError: connection refused"
    assert body["checks"]["redis"].startswith("error: ConnectionError")
