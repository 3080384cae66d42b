"""Upload size limits, per-token ingestion rate limits, `check --deploy` on production settings,
and no tokens in logs."""

import json
import logging
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from django.core.cache import cache

pytestmark = [pytest.mark.django_db, pytest.mark.services]

REPO = Path(__file__).resolve().parents[2]
BATCH = [{"id": "h1", "t": 0.0, "type": "message", "agent": "orchestrator", "content": "hello"}]


def test_ingestion_over_the_rate_answers_429_with_retry_after(team, settings):
    settings.SWARMSCOPE_INGEST_RATE, settings.SWARMSCOPE_INGEST_RATE_WINDOW_S = 3, 60
    cache.clear()
    rev, ann = team.client("rev"), team.client("ann")
    url = f"/api/traces/{team.trace_a.pk}/events/"
    codes = [rev.post(url, data=json.dumps(BATCH), content_type="application/json").status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    refused = rev.post("/v1/traces", data=b"{}", content_type="application/json")
    assert refused.status_code == 429 and 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["details"][0]["retryDelay"] == f"{refused['Retry-After']}s"  # OTLP: a Status
    # Per token: another token is not limited, and reads are never counted.
    assert ann.post(url, data=json.dumps(BATCH), content_type="application/json").status_code == 200
    assert rev.get(f"/api/traces/{team.trace_a.pk}/").status_code == 200


def test_bodies_over_the_limit_answer_413_and_store_nothing(team, settings):
    settings.SWARMSCOPE_MAX_UPLOAD_BYTES = 4096
    rev = team.client("rev")
    url = f"/api/traces/{team.trace_a.pk}/events/"
    big = json.dumps([{**BATCH[0], "id": f"b{i}", "content": "x" * 100} for i in range(60)]).encode()
    assert rev.post(url, data=big, content_type="application/json").status_code == 413
    # A small gzip body that expands past the limit (a "zip bomb") is refused as well.
    bomb = zlib.compress(b"[" + b" " * 100_000 + b"]", wbits=16 + zlib.MAX_WBITS)
    assert len(bomb) < 4096
    response = rev.post(url, data=bomb, content_type="application/json", HTTP_CONTENT_ENCODING="gzip")
    assert response.status_code == 413 and "SWARMSCOPE_MAX_UPLOAD_BYTES" in response.json()["error"]
    truncated = zlib.compress(json.dumps(BATCH).encode(), wbits=16 + zlib.MAX_WBITS)[:-6]
    assert (
        rev.post(url, data=truncated, content_type="application/json", HTTP_CONTENT_ENCODING="gzip").status_code == 400
    )
    assert not team.trace_a.events.filter(event_id__startswith="b").exists()
    ok = zlib.compress(json.dumps(BATCH).encode(), wbits=16 + zlib.MAX_WBITS)
    assert rev.post(url, data=ok, content_type="application/json", HTTP_CONTENT_ENCODING="gzip").status_code == 200


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "SWARMSCOPE_"))}
    env.update(
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="k" + "7Zq!x9#Lm2$vB4&nR8*tW1@yC6^pD3%e" * 3,
        ALLOWED_HOSTS="swarmscope.example.org",
        DJANGO_SETTINGS_MODULE="webapp.config.settings",
        SWARMSCOPE_DATA_DIR=str(tmp_path),
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_no_token_in_logs(team, caplog, fixtures):
    raw = team.tokens["rev"]
    caplog.set_level(logging.DEBUG)
    client = team.client("rev")
    client.get(f"/api/traces/{team.trace_a.pk}/")
    client.get("/api/traces/987654/")  # a 404 is logged by django.request
    client.post("/v1/traces", data=(fixtures / "otlp_genai_small.json").read_bytes(), content_type="application/json")
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {raw}x"  # an invalid token: 401, logged
    client.get("/api/traces/")
    text = "\n".join(r.getMessage() + repr(getattr(r, "args", "")) for r in caplog.records)
    assert caplog.records and "Unauthorized" in text
    assert raw not in text and raw[4:20] not in text


def test_nul_characters_are_refused_with_their_place_and_nothing_is_written(team):
    # PostgreSQL text and jsonb cannot hold U+0000: the API refuses it up front (400), on SQLite too.
    rev = team.client("rev")
    before = team.trace_a.events.count()
    body = '[{"id": "n1", "t": 1, "type": "message", "agent": "adder",\n "content": "x\\u0000y"}]'
    response = rev.post(f"/api/traces/{team.trace_a.pk}/events/", data=body, content_type="application/json")
    assert response.status_code == 400 and (response.json()["line"], response.json()["column"]) == (2, 15)
    literal = body.replace("\\u0000", "\\\\u0000")  # an escaped backslash then "u0000": plain text, accepted
    assert (
        rev.post(f"/api/traces/{team.trace_a.pk}/events/", data=literal, content_type="application/json").status_code
        == 200
    )
    assert team.trace_a.events.count() == before + 1
    assert rev.get("/api/traces/", {"q": "a\x00"}).json()["field"] == "q"
    comment = rev.post(
        "/api/review/comments/",
        data=json.dumps({"kind": "trace", "id": team.trace_a.pk, "body": "a\x00"}),
        content_type="application/json",
    )
    assert comment.status_code == 400 and comment.json()["field"] == "body"
